"""The Leaderboard page's sentences, composed from plain values so that the page only draws them.

Names from outside (a judge, a slice's key and value) are escaped here as markdown: every string returned is
shown by the page as markdown (a caption or a line), as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from core.app.leaderboard.tables import ChartInput
from core.app.leaderboard.view import LeaderboardView
from core.app.safe_text import escape_markdown as esc
from core.domain import Slice, slice_label
from core.methods import TARGETS, method_label

if TYPE_CHECKING:  # core.app.newmodel reads the view from this package: a runtime import would be circular
    from core.app.newmodel import Standing

STANDINGS_LISTED = 20  # models without human votes listed by name; the table has the rest


def headline_markdown(view: LeaderboardView, under_peer: bool, on_slice: bool) -> str:
    """The page's headline as a markdown heading: the view's #1 model (escaped), or that no model can be ranked
    on this slice or dataset yet; a level smaller (####) when it follows a peer's own headline (``under_peer``)."""
    level = "####" if under_peer else "###"
    headline = view.headline()
    if headline:
        return f"{level} {esc(headline, at_line_start=False)}"
    return f"{level} No model can be ranked on this {'slice' if on_slice else 'dataset'} yet"


def tau_undefined_notice(reason: str | None) -> str:
    """The notice when the judge has rubric scores but τ cannot be fitted and none was chosen: why, and that
    Soft-Elo is drawn only once a τ is chosen."""
    return f"τ undefined: {reason}. Soft-Elo is not drawn; choose a τ on the slider to draw it there."


def ranking_caption(
    view: LeaderboardView,
    judge: str | None,
    alpha: float,
    choice: tuple[str, str] | None,
    where: Slice,
    current: bool = True,
    votes_behind: int = 0,
) -> str:
    """The caption under the headline: what ranks the table and what a shared rank means, then the judge (with
    why it is the default one when ``choice``, the default judge and its reason, names it), the human votes
    counted, whether the intervals lag the newest votes (``current`` False: ``votes_behind`` votes, 0 when
    votes were only changed), and the slice."""
    basis = {
        "human": "ranked by human Elo from human votes (95% CI)",
        "predicted": f"ranked by {esc(judge)}'s predicted human Elo with its {1 - alpha:.0%} conformal interval "
        "(this dataset has no human Elo of its own)",
        "hard": f"ranked by {esc(judge)}'s Hard-Elo (95% bootstrap CI)",
        "soft": f"ranked by {esc(judge)}'s Soft-Elo (95% bootstrap CI)",
    }[view.primary]
    judge_note = (
        f" Judge **{esc(judge)}**" + (f": {choice[1]}." if choice and choice[0] == judge else ".") if judge else ""
    )
    # each vote counts for both of its models
    n_votes = int(view.table["n_votes"].sum()) // 2 if "n_votes" in view.table else 0
    votes_note = f" Human Elo from {n_votes:,} human votes." if n_votes else ""
    if not current:
        newer = f"the {votes_behind:,} newest human votes" if votes_behind else "the latest changed votes"
        votes_note += (
            f" The intervals are calibrated without {newer}: their leave-one-model-out table is being "
            "recomputed in the background, and the page updates when it is ready."
        )
    slice_note = ""
    if where:
        slice_note = f" On the slice **{esc(slice_label(where))}** only" + (
            f" (τ fitted on the slice: {view.tau:.3g})." if view.tau is not None and view.tau_fitted else "."
        )
    return (
        f"{basis[0].upper()}{basis[1:]}; a rank counts the models whose interval lies entirely above, so models "
        f"sharing a rank are statistically tied.{judge_note}{votes_note}{slice_note}"
    )


def chart_how_to_read(drawn: ChartInput) -> str:
    """The interval chart's "how to read" sentence: what a row and a marker are, and what the bars drawn around
    which marker mean (a conformal interval for the human Elo, or a 95% confidence interval), or that none are."""
    around: dict[str, str] = {m: method_label(m) for m in TARGETS}
    drawn_around = around.get((drawn.interval or "").replace("_elo", ""), "")
    return "each row is a model, in the table's order; markers are its Elo under each method drawn. " + (
        f"The bar around the {drawn_around} marker is "
        + (
            "the conformal interval where the model's human Elo should lie."
            if drawn.conformal
            else "its 95% confidence interval."
        )
        if drawn.interval
        else "No intervals are drawn for the methods shown."
    )


def unrated_text(unrated: Sequence[Standing]) -> tuple[list[str], str]:
    """The "models without human votes" section: its markdown list items (the first :data:`STANDINGS_LISTED`
    standings, names escaped) and the caption under them (how many more the table has, how to evaluate one)."""
    lines = [f"- {esc(standing.text())}" for standing in unrated[:STANDINGS_LISTED]]
    more = len(unrated) - STANDINGS_LISTED
    caption = (
        "Each predicted from its judge Elo with the conformal interval drawn above (same α and τ); "
        + (f"{more} more in the table. " if more > 0 else "")
        + "Evaluate a new model with `python -m core evaluate` (README)."
    )
    return lines, caption


def rows_caption(shown: int, total: int, present: bool) -> str | None:
    """The caption under a table that shows ``shown`` of its ``total`` models: in presentation mode the top
    rows and how many more, else "N of M models shown"; None when every model is shown."""
    if shown >= total:
        return None
    if present:
        return f"The top {shown}, and {total - shown} more models (leave presentation mode to see every row)."
    return f"{shown} of {total} models shown."


def style_caption(n_battles: int, n_votes: int | None, note: str) -> str:
    """The caption under a style-controlled leaderboard: the fit, what it counted (battles, and votes when
    ``n_votes`` is not None), what 'Moves' means, and the leaderboard's ``note`` as a sentence (escaped)."""
    counts = f"{n_battles:,} battles" + (f", {n_votes:,} votes" if n_votes is not None else "")
    return (
        f"Bradley–Terry with style covariates (answer length, headers, bold, list items: the a − b "
        f"differences, standardised) over {counts}; 95% sandwich intervals. 'Moves' is the places a model "
        f"gains (▲) or loses (▼) once style is held equal. {esc(note[0].upper() + note[1:])}."
    )


def baseline_caption(judge: str | None, n_battles: int, method: str = "") -> str:
    """The caption under the win rates against the baseline: whose labels (``judge``, escaped, or the human
    votes), over how many battles, how a win rate and its discrete variant are counted and ``method``, how
    the length-controlled win rate was fitted (``WinRateView.method``)."""
    who = f"judge **{esc(judge)}**" if judge else "the human votes"
    return (
        f"By {who}, over {n_battles:,} battles with the baseline. Win rate: the mean probability of "
        "beating the baseline (a tie counts half), ± one standard error over instructions; discrete: each "
        "comparison counted as a win, half or loss." + (" " + method if method else "")
    )


def turn_caption(method: str) -> str:
    """The caption under the by-turn table, for the Elo ``method`` fitted per turn group ('human' or 'hard')."""
    return (
        f"{'Human' if method == 'human' else 'Hard-'}Elo fitted separately on the battles of each turn "
        "group (95% sandwich intervals; each group has its own centring, so compare models within a column, "
        "and a model's change of rank across columns)."
    )


def no_battles_notice(dataset: str, graded: bool) -> str:
    """The notice of a dataset without battles: the grades above are its leaderboard, or nothing ranks it."""
    if not graded:
        return f"dataset **{esc(dataset)}** has no battles and no grades to rank its models by."
    return (
        "no battles: the Elo leaderboards need pairwise judgments or human votes; this dataset has "
        "single-answer grades only, scored above."
    )


def export_title(dataset: str, where: Slice) -> str:
    """The exported table's title: the dataset, and the slice when there is one."""
    return f"Leaderboard of {dataset}" + (f" on {slice_label(where)}" if where else "")
