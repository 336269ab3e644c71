"""The store's schema: each entry of MIGRATIONS upgrades version i → i+1.

A new store runs them all.  Never edit a released migration: append one.
"""

from __future__ import annotations

from core.domain import SCORE_COLUMNS

_SCORE_DDL = ",\n    ".join(f"{c} DOUBLE" for c in SCORE_COLUMNS)

MIGRATIONS: list[str] = [
    f"""
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE datasets (
    dataset_id INTEGER PRIMARY KEY,
    name VARCHAR NOT NULL UNIQUE,
    source VARCHAR NOT NULL,
    created_at TIMESTAMP DEFAULT current_timestamp,
    meta_json VARCHAR
);
CREATE TABLE imports (
    content_hash VARCHAR PRIMARY KEY,
    dataset_id INTEGER NOT NULL,
    format VARCHAR NOT NULL,
    path VARCHAR,
    imported_at TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE models (
    dataset_id INTEGER NOT NULL,
    model VARCHAR NOT NULL,
    family VARCHAR,
    true_elo DOUBLE,
    notes VARCHAR,
    PRIMARY KEY (dataset_id, model)
);
CREATE TABLE prompts (
    prompt_id BIGINT PRIMARY KEY,
    dataset_id INTEGER NOT NULL,
    prompt_key BIGINT NOT NULL,
    external_id VARCHAR,
    text VARCHAR,
    language VARCHAR,
    category VARCHAR,
    reference VARCHAR,
    verifiable BOOLEAN
);
CREATE TABLE completions (
    completion_id BIGINT PRIMARY KEY,
    dataset_id INTEGER NOT NULL,
    prompt_id BIGINT NOT NULL,
    model VARCHAR NOT NULL,
    text VARCHAR,
    length INTEGER,
    n_headers INTEGER,
    n_bold INTEGER,
    n_list_items INTEGER,
    correct BOOLEAN,
    echo BOOLEAN,
    direct_label VARCHAR
);
CREATE TABLE battles (
    battle_id BIGINT PRIMARY KEY,
    dataset_id INTEGER NOT NULL,
    battle_key BIGINT NOT NULL,
    external_id VARCHAR,
    prompt_id BIGINT,
    model_a VARCHAR NOT NULL,
    model_b VARCHAR NOT NULL,
    completion_a BIGINT,
    completion_b BIGINT,
    language VARCHAR,
    turn INTEGER,
    tstamp DOUBLE
);
CREATE TABLE annotators (
    dataset_id INTEGER NOT NULL,
    annotator VARCHAR NOT NULL,
    kind VARCHAR,
    true_ability DOUBLE,
    PRIMARY KEY (dataset_id, annotator)
);
CREATE TABLE votes (
    battle_id BIGINT NOT NULL,
    annotator VARCHAR,
    winner VARCHAR NOT NULL CHECK (winner IN ('a', 'b', 'tie', 'both_bad'))
);
CREATE TABLE judges (
    judge_id INTEGER PRIMARY KEY,
    name VARCHAR NOT NULL UNIQUE,
    family VARCHAR,
    model VARCHAR,
    base_url VARCHAR,
    template VARCHAR,
    prompt_version VARCHAR,
    profile VARCHAR,
    params_json VARCHAR,
    config_json VARCHAR,
    created_at TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE judgments (
    judgment_id BIGINT PRIMARY KEY,
    battle_id BIGINT NOT NULL,
    judge_id INTEGER NOT NULL,
    "order" VARCHAR NOT NULL CHECK ("order" IN ('ab', 'ba', 'avg')),
    prompt_version VARCHAR NOT NULL,
    variant VARCHAR NOT NULL DEFAULT 'original',
    verdict VARCHAR CHECK (verdict IN ('a', 'b', 'tie')),
    {_SCORE_DDL},
    p_a DOUBLE,
    confidence DOUBLE,
    raw_output VARCHAR,
    parse_error VARCHAR,
    latency_ms DOUBLE,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    run_id INTEGER,
    created_at TIMESTAMP DEFAULT current_timestamp,
    UNIQUE (battle_id, judge_id, "order", prompt_version, variant)
);
CREATE TABLE judge_runs (
    run_id INTEGER PRIMARY KEY,
    judge_id INTEGER NOT NULL,
    dataset_id INTEGER NOT NULL,
    status VARCHAR NOT NULL,
    planned INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    parse_errors INTEGER NOT NULL DEFAULT 0,
    prompt_tokens BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    started_at TIMESTAMP DEFAULT current_timestamp,
    updated_at TIMESTAMP DEFAULT current_timestamp,
    finished_at TIMESTAMP,
    config_json VARCHAR,
    message VARCHAR
);
CREATE INDEX battles_dataset ON battles (dataset_id);
CREATE INDEX votes_battle ON votes (battle_id);
CREATE INDEX judgments_battle ON judgments (battle_id);
""",
    # 2: outages and reconciliation.  A call that got no response is a failure only when the endpoint
    # said so (a 4xx); raw outputs are capped with a flag; a run names its owner process and heartbeat.
    """
ALTER TABLE judgments ADD COLUMN call_failed BOOLEAN DEFAULT false;
UPDATE judgments SET call_failed = (raw_output IS NULL AND parse_error LIKE 'call failed:%');
ALTER TABLE judgments ADD COLUMN raw_truncated BOOLEAN DEFAULT false;
ALTER TABLE judge_runs ADD COLUMN owner_pid INTEGER;
ALTER TABLE judge_runs ADD COLUMN owner_host VARCHAR;
ALTER TABLE judge_runs ADD COLUMN heartbeat_at TIMESTAMP;
ALTER TABLE judge_runs ADD COLUMN deferred INTEGER DEFAULT 0;
""",
    # 3: DuckDB reads a dataset's battles and votes by scans and hash joins, never through these two
    # indexes, while every bulk insert pays to maintain them (a fifth of a 3M-battle import).
    """
DROP INDEX IF EXISTS battles_dataset;
DROP INDEX IF EXISTS votes_battle;
""",
    # 4: derived results that outlive the process (leave-one-out tables, τ fits, am-ELO, SCOPE curves, …),
    # one row per (what, inputs); valid while the data they were computed from is unchanged.
    """
CREATE TABLE results (
    key VARCHAR PRIMARY KEY,
    kind VARCHAR NOT NULL,
    dataset VARCHAR,
    stamp VARCHAR NOT NULL,
    code_version VARCHAR NOT NULL,
    payload BLOB NOT NULL,
    seconds DOUBLE,
    created_at TIMESTAMP DEFAULT current_timestamp
);
""",
    # 5: payloads stored uncompressed.  Reading one compressed payload decompressed its whole segment: 96 ms
    # for a 5 KB result in a store of 500 (69 MB); uncompressed, 1–2 ms.  A page reads several per visit.
    """
CREATE TABLE results_v5 (
    key VARCHAR PRIMARY KEY,
    kind VARCHAR NOT NULL,
    dataset VARCHAR,
    stamp VARCHAR NOT NULL,
    code_version VARCHAR NOT NULL,
    payload BLOB NOT NULL USING COMPRESSION uncompressed,
    seconds DOUBLE,
    created_at TIMESTAMP DEFAULT current_timestamp
);
INSERT INTO results_v5 SELECT key, kind, dataset, stamp, code_version, payload, seconds, created_at FROM results;
DROP TABLE results;
ALTER TABLE results_v5 RENAME TO results;
""",
    # 6: multi-turn conversations kept whole.  ``text`` stays the first user message (prompts) and every
    # assistant message joined (completions); ``turns`` holds each turn, as a JSON list of strings, when
    # there is more than one.  A graded verdict (Arena-Hard's A>>B) keeps its grade: −2…2 in battle terms.
    """
ALTER TABLE prompts ADD COLUMN turns VARCHAR;
ALTER TABLE completions ADD COLUMN turns VARCHAR;
ALTER TABLE judgments ADD COLUMN grade SMALLINT;
""",
    # 7: a run is a job: what it covers (dataset, judge, sample rule, seed, size) is stored with it, so
    # running it again (or --resume) completes exactly that set.
    """
ALTER TABLE judge_runs ADD COLUMN definition_json VARCHAR;
""",
    # 8: answers generated for a dataset's prompts by a model endpoint: one row per (prompt, model,
    # generation settings), the reasoning apart from the answer, tokens, latency, or the failure's reason.
    """
CREATE TABLE generations (
    generation_id BIGINT PRIMARY KEY,
    dataset_id INTEGER NOT NULL,
    prompt_id BIGINT NOT NULL,
    model VARCHAR NOT NULL,
    settings_key VARCHAR NOT NULL,
    status VARCHAR NOT NULL CHECK (status IN ('ok', 'failed')),
    text VARCHAR,
    reasoning VARCHAR,
    turns VARCHAR,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_ms DOUBLE,
    error VARCHAR,
    settings_json VARCHAR,
    created_at TIMESTAMP DEFAULT current_timestamp,
    UNIQUE (prompt_id, model, settings_key)
);
""",
    # 9: judge runs through the OpenAI Batch API (one row per submitted batch: the units it carries, the
    # provider's ids, its state, so a restarted process collects it instead of paying twice), and the
    # persisted results of ``evaluate`` (a new model's predicted human Elo and interval, listed later).
    """
CREATE TABLE judge_batches (
    batch_key VARCHAR PRIMARY KEY,
    batch_id VARCHAR,
    run_id BIGINT,
    judge_id INTEGER NOT NULL,
    dataset_id INTEGER NOT NULL,
    prompt_version VARCHAR NOT NULL,
    units_json VARCHAR NOT NULL,
    n_requests INTEGER NOT NULL,
    status VARCHAR NOT NULL,
    input_file_id VARCHAR,
    output_file_id VARCHAR,
    error_file_id VARCHAR,
    message VARCHAR,
    created_at TIMESTAMP DEFAULT current_timestamp,
    updated_at TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE evaluations (
    evaluation_id BIGINT PRIMARY KEY,
    dataset_id INTEGER NOT NULL,
    model VARCHAR NOT NULL,
    judge VARCHAR NOT NULL,
    alpha DOUBLE NOT NULL,
    status VARCHAR NOT NULL,
    method VARCHAR,
    predicted DOUBLE,
    lower DOUBLE,
    upper DOUBLE,
    rank_best INTEGER,
    rank_worst INTEGER,
    n_rated INTEGER,
    n_judged INTEGER,
    n_calibration INTEGER,
    reason VARCHAR,
    result_json VARCHAR,
    created_at TIMESTAMP DEFAULT current_timestamp
);
""",
    # 10: votes cast in the app: when, which answer was shown on the left ('ab': the battle's a), from where
    # ('vote-page'; NULL for imported votes).  One vote per annotator and battle: a changed mind replaces it.
    """
ALTER TABLE votes ADD COLUMN shown_order VARCHAR;
ALTER TABLE votes ADD COLUMN voted_at TIMESTAMP;
ALTER TABLE votes ADD COLUMN source VARCHAR;
""",
    # 11: a judgment's shown order may be unknown (AlpacaEval randomised it and kept only the un-swapped
    # preference): 'unknown' joins the orders.  DuckDB cannot alter a CHECK, so the table is rebuilt as it is.
    f"""
CREATE TABLE judgments_v11 (
    judgment_id BIGINT PRIMARY KEY,
    battle_id BIGINT NOT NULL,
    judge_id INTEGER NOT NULL,
    "order" VARCHAR NOT NULL CHECK ("order" IN ('ab', 'ba', 'avg', 'unknown')),
    prompt_version VARCHAR NOT NULL,
    variant VARCHAR NOT NULL DEFAULT 'original',
    verdict VARCHAR CHECK (verdict IN ('a', 'b', 'tie')),
    {_SCORE_DDL},
    p_a DOUBLE,
    confidence DOUBLE,
    raw_output VARCHAR,
    parse_error VARCHAR,
    latency_ms DOUBLE,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    run_id INTEGER,
    created_at TIMESTAMP DEFAULT current_timestamp,
    call_failed BOOLEAN DEFAULT false,
    raw_truncated BOOLEAN DEFAULT false,
    grade SMALLINT,
    UNIQUE (battle_id, judge_id, "order", prompt_version, variant)
);
INSERT INTO judgments_v11 SELECT * FROM judgments;
DROP INDEX judgments_battle;
DROP TABLE judgments;
ALTER TABLE judgments_v11 RENAME TO judgments;
CREATE INDEX judgments_battle ON judgments (battle_id);
""",
    # v12: a run's lease names its owner process by pid *and* start time (a reused pid is another process), and
    # covers a paused run as much as a running one (core.store.journal.reconcile).
    """
ALTER TABLE judge_runs ADD COLUMN owner_start BIGINT;
""",
    # v13: what a layout says about a prompt beyond its text (Arena-Hard's category and cluster, LMArena's tags,
    # the demo's topic), the slices a leaderboard can be drawn on (core.domain.Slice)
    """
CREATE TABLE prompt_attributes (
    prompt_id BIGINT NOT NULL,
    key VARCHAR NOT NULL,
    value VARCHAR NOT NULL,
    PRIMARY KEY (prompt_id, key)
);
""",
    # v14: single-answer grades (FastChat's MT-Bench scores): one judge's grade of one model's answer to a prompt
    # (a question at a turn), 1–10, NULL when the judge's grade could not be read (FastChat's -1, with the reason
    # in parse_error).  ``run`` numbers the grades of one answer by one judge: a run appended later is 2, 3, …
    """
CREATE TABLE grades (
    grade_id BIGINT PRIMARY KEY,
    dataset_id INTEGER NOT NULL,
    prompt_id BIGINT NOT NULL,
    model VARCHAR NOT NULL,
    judge VARCHAR NOT NULL,
    prompt_version VARCHAR NOT NULL DEFAULT 'imported',
    turn INTEGER,
    run INTEGER NOT NULL DEFAULT 1,
    score DOUBLE,
    raw_output VARCHAR,
    parse_error VARCHAR,
    UNIQUE (prompt_id, model, judge, run)
);
""",
    # v15: an answer's length in tokens as its source counted it (Arena-Hard's token_len), NULL when the file does
    # not say: Arena-Hard's style control measures length in tokens
    """
ALTER TABLE completions ADD COLUMN n_tokens INTEGER;
""",
]

SCHEMA_VERSION = len(MIGRATIONS)
