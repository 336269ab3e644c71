"""Chart builders draw exactly their data: every model's segment where its values say."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core import charts


def _segments(fig) -> dict[str, tuple[str, float, float]]:
    """model → (trace name, left y, right y), read back from the figure's None-separated line segments."""
    out = {}
    for trace in fig.data:
        xs, ys, text = list(trace.x), list(trace.y), list(trace.text)
        for k in range(0, len(xs), 3):
            assert xs[k : k + 2] == ["Hard-Elo", "Soft-Elo"] and text[k] == text[k + 1]
            assert xs[k + 2] is None and ys[k + 2] is None  # the gap between two models' lines
            out[text[k]] = (trace.name, ys[k], ys[k + 1])
    return out


def test_rank_slope_draws_each_models_ranks_in_its_direction():
    frame = pd.DataFrame(
        {
            "model": ["a", "b", "c", "d", "e"],
            "hard_elo": [1600.0, 1550.0, 1500.0, 1450.0, 1400.0],
            "soft_elo": [1590.0, 1480.0, 1520.0, 1450.0, np.nan],  # b and c swap; e has no Soft-Elo
        }
    )
    fig = charts.rank_slope(frame, "hard_elo", "soft_elo", "Hard-Elo", "Soft-Elo")
    assert _segments(fig) == {
        "a": ("same", 1.0, 1.0),
        "b": ("down", 2.0, 3.0),
        "c": ("up", 3.0, 2.0),
        "d": ("same", 4.0, 4.0),
    }
    assert len(fig.data) == 3  # one trace per direction, whatever the number of models


def _arena(n: int, seed: int) -> pd.DataFrame:
    """``n`` models with a Hard-Elo and a Soft-Elo 30 points apart on average (ties included: rounded)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"model": [f"m{k:03d}" for k in range(n)], "hard_elo": rng.normal(1500, 100, n).round()})
    return frame.assign(soft_elo=lambda f: f["hard_elo"] + rng.normal(0, 30, n).round())


def test_rank_slope_ranks_match_pandas_min_ranks_on_a_large_arena():
    n = 250
    frame = _arena(n, 3)
    got = _segments(charts.rank_slope(frame, "hard_elo", "soft_elo", "Hard-Elo", "Soft-Elo"))
    left = frame.set_index("model")["hard_elo"].rank(ascending=False, method="min")
    right = frame.set_index("model")["soft_elo"].rank(ascending=False, method="min")
    assert len(got) == n
    for m, (direction, a, b) in got.items():
        assert (a, b) == (left[m], right[m])
        assert direction == ("up" if b < a else "down" if b > a else "same")


def _annotators(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    status = np.where(
        np.arange(n) % 50 == 0, "adversarial", np.where(np.arange(n) % 50 == 1, "uninformative", "reliable")
    )
    return pd.DataFrame(
        {
            "annotator": [f"a{k}" for k in range(n)],
            "n_records": rng.integers(20, 400, n),
            "ability_rel": rng.normal(1, 0.3, n),
            "ability_se_rel": rng.uniform(0.05, 0.4, n),
            "status": status,
            "excluded": np.zeros(n, bool),
        }
    )


def test_annotator_abilities_draw_every_annotator_with_its_interval():
    ann = _annotators(300)
    fig = charts.annotator_abilities(ann)
    assert {t.type for t in fig.data} == {"scatter"}
    by_status = {t.name: t for t in fig.data}
    for status, group in ann.groupby("status"):
        t = by_status[status]
        assert list(t.text) == group["annotator"].tolist()
        assert np.allclose(t.y, group["ability_rel"]) and t.error_y.visible is not False
        assert np.allclose(t.error_y.array, 1.959963984540054 * group["ability_se_rel"].to_numpy())


def test_thousands_of_reliable_annotators_are_a_density_and_the_flagged_keep_their_points_and_intervals():
    ann = _annotators(charts.WEBGL_ABOVE * 3)
    reliable = ann[ann["status"] == "reliable"]
    assert len(reliable) > charts.WEBGL_ABOVE
    fig = charts.annotator_abilities(ann)
    by_name = {t.name: t for t in fig.data}
    density = by_name["reliable"]
    assert density.type == "heatmap"
    z = np.nan_to_num(np.asarray(density.z, float))
    assert z.sum() == len(reliable)  # every reliable annotator counted once
    # a cell's count is the number of reliable annotators inside its edges (cells are equal, centred on x, y)
    x, y = np.asarray(density.x), np.asarray(density.y)
    dx, dy = x[1] - x[0], y[1] - y[0]
    for j, i in [np.unravel_index(np.argmax(z), z.shape), (len(y) // 2, len(x) // 3)]:
        inside = (
            (reliable["n_records"] >= x[i] - dx / 2)
            & (reliable["n_records"] < x[i] + dx / 2)
            & (reliable["ability_rel"] >= y[j] - dy / 2)
            & (reliable["ability_rel"] < y[j] + dy / 2)
        )
        assert z[j, i] == inside.sum()
    for status in ("adversarial", "uninformative"):
        t, group = by_name[status], ann[ann["status"] == status]
        assert t.type == "scatter" and list(t.text) == group["annotator"].tolist()  # each flagged one a point
        assert t.error_y.visible is not False
        assert np.allclose(t.error_y.array, 1.959963984540054 * group["ability_se_rel"].to_numpy())
    assert {t.type for t in charts.annotator_abilities(ann.iloc[: charts.WEBGL_ABOVE // 2]).data} == {"scatter"}


def _pair_counts(seed: int, n_models: int, share: float, most: int) -> tuple[list[str], pd.DataFrame]:
    """Models m000… and battles per unordered pair (model_1, model_2, n_battles) for a random ``share`` of the
    pairs, each count in [1, ``most``)."""
    rng = np.random.default_rng(seed)
    models = [f"m{k:03d}" for k in range(n_models)]
    pairs = pd.DataFrame(
        [
            (a, b, int(rng.integers(1, most)))
            for i, a in enumerate(models)
            for b in models[i + 1 :]
            if rng.random() < share
        ],
        columns=["model_1", "model_2", "n_battles"],
    )
    return models, pairs


def test_the_coverage_heatmap_holds_every_pair_count_exactly_and_leaves_unplayed_pairs_blank():
    models, pairs = _pair_counts(5, 40, 0.6, 5_000_000)
    z = np.asarray(charts.coverage_heatmap(pairs, models).data[0].z, float)
    expected = np.full((40, 40), np.nan)
    for a, b, n in pairs.itertuples(index=False):
        expected[models.index(a), models.index(b)] = expected[models.index(b), models.index(a)] = n
    np.testing.assert_array_equal(z, expected)  # symmetric, exact (float32 holds these), NaN where unplayed
    big = pairs.assign(n_battles=pairs["n_battles"] + 2**24 + 1)  # past float32's exact integers: kept as float64
    z_big = np.asarray(charts.coverage_heatmap(big, models).data[0].z, float)
    assert np.nansum(z_big) == 2 * big["n_battles"].sum()


def test_past_its_limit_the_coverage_heatmap_keeps_the_most_compared_models_and_says_so():
    models, pairs = _pair_counts(8, 90, 0.3, 400)
    per_model = dict.fromkeys(models, 0)
    for a, b, n in pairs.itertuples(index=False):
        per_model[a] += n
        per_model[b] += n
    fig = charts.coverage_heatmap(pairs, models, limit=25)
    shown = list(fig.data[0].x)
    assert len(shown) == 25 and shown == sorted(shown)  # the given order kept
    assert min(per_model[m] for m in shown) >= max(per_model[m] for m in models if m not in shown)
    assert "the 25 models with the most battles, of 90" in fig.layout.title.text
    z = np.asarray(fig.data[0].z, float)  # the cells of the kept models are the pair counts, exactly
    for a, b, n in pairs.itertuples(index=False):
        if a in shown and b in shown:
            assert z[shown.index(a), shown.index(b)] == z[shown.index(b), shown.index(a)] == n
    assert "of 90" not in charts.coverage_heatmap(pairs, models, limit=90).layout.title.text  # all shown: no cap


def test_labels_do_not_print_over_what_they_label():
    """The τ profile's interval is named in the legend (the curve bottoms out inside the band, under any label
    written there); the annotators' average line is labelled in the right margin, not among the points."""
    taus = np.geomspace(0.1, 3, 60)
    profile = pd.DataFrame({"tau": taus, "delta": 40 * np.log(taus / 0.5) ** 2})
    fig = charts.tau_profile(profile, 0.5, 0.36, 0.69)
    assert not [a for a in fig.layout.annotations if "95% interval" in (a.text or "")]
    assert any(t.name == "95% interval 0.360–0.690" for t in fig.data)
    abilities = charts.annotator_abilities(_annotators(50))
    label = next(a for a in abilities.layout.annotations if "average" in (a.text or ""))
    assert label.xref == "paper" and label.x >= 1 and label.xanchor == "left"  # outside the plotting area
    assert abilities.layout.margin.r >= 60


def test_rank_slope_draws_the_chosen_models_at_their_ranks_among_all():
    n = 250
    frame = _arena(n, 5)
    everyone = _segments(charts.rank_slope(frame, "hard_elo", "soft_elo", "Hard-Elo", "Soft-Elo"))
    chosen = tuple(frame.sort_values("hard_elo", ascending=False)["model"].head(20)) + ("m123",)
    fig = charts.rank_slope(frame, "hard_elo", "soft_elo", "Hard-Elo", "Soft-Elo", models=chosen)
    assert _segments(fig) == {m: everyone[m] for m in chosen}  # the same ranks, among all 250
    assert "21 of 250 models" in fig.layout.title.text and fig.layout.height == 16 * 21 + 160
    assert charts.rank_slope(frame, "hard_elo", "soft_elo", "A", "B", models=tuple(frame["model"])).layout.height == (
        16 * n + 160
    )
