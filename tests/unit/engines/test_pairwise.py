"""All pairs and MBR: entry (i, j) of the N x M matrices is the reference's score of that one pair (bert-score
0.3.13 on the expanded pairs, run unpadded), also with IDF over the M references and rescaled; an independent
float64 computation agrees; MBR picks what a brute-force loop over the reference picks; the command line
round trip; bad input fails before any model is loaded. Text: WMT lines 1000-1100 and 2000-2100 of the long
files, which no other test uses."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import bertscore_tm.engines.pairwise as pw
from bertscore_tm import BERTScore, score
from bertscore_tm.cli import main
from bertscore_tm.engines import mbr_select, pairwise_bert_score
from bertscore_tm.scoring.baselines import packaged_baseline_path
from tests.conftest import MINILM, WMT

TOL = 1e-5
NO_MODEL = "no-such-org/no-such-model"  # loading it would fail with ModelNotFoundError


@pytest.fixture(scope="module")
def held_out(wmt: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """6 candidates (one very short) and 5 references (one repeated), of uneven lengths."""
    cands = [*wmt["hyps_long"][1000:1005], "Thanks."]
    refs = [*wmt["refs_long"][1000:1004], wmt["refs_long"][1001]]
    return cands, refs


@pytest.fixture(scope="module")
def metric() -> BERTScore:
    return BERTScore(MINILM)


def expand(cands: list[str], refs: list[str]) -> tuple[list[str], list[str]]:
    """Every (candidate, reference) pair, candidate-major: pair i * M + j is (cands[i], refs[j])."""
    return [c for c in cands for _ in refs], [r for _ in cands for r in refs]


def assert_matrices(ours: dict, theirs: tuple, n: int, m: int, tol: float = TOL) -> None:
    for name, expected in zip(("precision", "recall", "f1"), theirs, strict=True):
        got = ours[name]
        expected = expected.reshape(*expected.shape[:-1], n, m)
        assert got.shape == expected.shape, (name, tuple(got.shape), tuple(expected.shape))
        err = (got - expected).abs().max().item()
        assert err <= tol, f"{name} differs from the expanded pairs' scores by {err:.2e}"


# -- entry (i, j) is the score of that one pair --------------------------------------------------------------


@pytest.mark.slow
def test_entries_equal_the_reference_on_expanded_pairs(held_out, reference_score) -> None:
    cands, refs = held_out
    ours = pairwise_bert_score(cands, refs, MINILM)
    assert_matrices(ours, reference_score(*expand(cands, refs), batch_size=1), len(cands), len(refs))
    assert bool((ours["f1"][:, 1] == ours["f1"][:, 4]).all())  # a repeated reference repeats its column


@pytest.mark.slow
def test_idf_is_over_the_m_references_as_given(held_out, reference_score, minilm_path) -> None:
    from bert_score.utils import get_idf_dict, get_tokenizer

    cands, refs = held_out
    idf = get_idf_dict(refs, get_tokenizer(minilm_path, use_fast=True), nthreads=0)  # the repeat counts twice
    ours = pairwise_bert_score(cands, refs, MINILM, idf=True)
    assert_matrices(ours, reference_score(*expand(cands, refs), batch_size=1, idf=idf), len(cands), len(refs))
    # not the IDF of the N x M expanded references, which `bert_score` on those pairs would use
    _, _, f_expanded = score(*expand(cands, refs), model_type=MINILM, idf=True)
    assert (ours["f1"] - f_expanded.view(len(cands), len(refs))).abs().max() > 1e-3


@pytest.mark.slow
def test_rescaled_entries_equal_the_reference(held_out, reference_score) -> None:
    cands, refs = held_out
    ours = pairwise_bert_score(cands, refs, MINILM, rescale_with_baseline=True, return_hash=True)
    theirs = reference_score(
        *expand(cands, refs),
        batch_size=1,
        lang="en",
        rescale_with_baseline=True,
        baseline_path=str(packaged_baseline_path("en", MINILM)),
    )
    assert_matrices(ours, theirs, len(cands), len(refs))
    assert ours["hash"].endswith("-rescaled_fast-tokenizer")


@pytest.mark.slow
def test_all_layers_give_one_matrix_per_layer(held_out, reference_score) -> None:
    cands, refs = held_out[0][:3], held_out[1][:4]
    ours = pairwise_bert_score(cands, refs, MINILM, all_layers=True)
    assert ours["f1"].shape == (7, 3, 4)
    assert_matrices(ours, reference_score(*expand(cands, refs), batch_size=1, all_layers=True), 3, 4)


@pytest.mark.slow
def test_equals_an_independent_float64_computation(held_out, minilm_path, metric) -> None:
    """Plain torch, one text at a time (no padding anywhere), cosines and sums in float64."""
    from transformers import AutoModel, AutoTokenizer

    cands, refs = held_out[0] + [""], held_out[1]
    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    model = AutoModel.from_pretrained(minilm_path).eval()
    special = {tokenizer.cls_token_id, tokenizer.sep_token_id}

    def embed(text: str) -> tuple[torch.Tensor, torch.Tensor]:
        ids = tokenizer(text.strip(), return_tensors="pt")["input_ids"]
        with torch.no_grad():
            hidden = model(ids, output_hidden_states=True).hidden_states[5][0].double()
        weight = torch.tensor([0.0 if t in special else 1.0 for t in ids[0].tolist()], dtype=torch.float64)
        return hidden / hidden.norm(dim=-1, keepdim=True), weight

    expected = torch.zeros((3, len(cands), len(refs)), dtype=torch.float64)
    for i, cand in enumerate(cands[:-1]):  # the blank candidate's row stays 0
        c, wc = embed(cand)
        for j, ref in enumerate(refs):
            r, wr = embed(ref)
            sim = c @ r.T
            p = (sim.max(dim=1).values * wc).sum() / wc.sum()
            rec = (sim.max(dim=0).values * wr).sum() / wr.sum()
            expected[:, i, j] = torch.stack((p, rec, 2 * p * rec / (p + rec)))
    with pytest.warns(UserWarning, match="1 blank text"):
        forward = metric.pairwise(cands, refs)
    with pytest.warns(UserWarning, match="1 blank text"):
        backward = metric.pairwise(refs, cands)  # the other side is kept as the store
    for k, name in enumerate(("precision", "recall", "f1")):
        assert (forward[name].double() - expected[k]).abs().max() <= 1e-6, name
    assert torch.equal(forward["precision"], backward["recall"].T)
    assert torch.equal(forward["f1"], backward["f1"].T)


def test_padding_is_never_a_match(tmp_path, reference_score) -> None:
    """A tiny random model, whose tokens often have only negative similarities: there a padding position
    scored 0 would win the maximum. Short and long texts share tiles; at every layer each entry is still the
    unpadded reference's, which the reference's own padded batches are not, at some layer at least."""
    from tiny_models import build_tiny_model

    model = str(build_tiny_model("distilbert", tmp_path))
    cands = ["hello world", "The cat sat on the mat and looked out of the window.", "Prices rose."]
    refs = ["A man is playing a guitar on the street corner.", "ok", "The train to London was delayed."]
    pairs = expand(cands, refs)
    padding_matters = 0.0
    for layer in range(3):
        ours = pairwise_bert_score(cands, refs, model, num_layers=layer)
        unpadded = reference_score(*pairs, model_type=model, num_layers=layer, batch_size=1)
        assert_matrices(ours, unpadded, 3, 3)
        padded = reference_score(*pairs, model_type=model, num_layers=layer, batch_size=9)
        padding_matters = max(padding_matters, (padded[2] - unpadded[2]).abs().max().item())
    assert padding_matters > 1e-3  # these pairs do have tokens whose similarities are all negative


def test_a_set_against_itself_has_a_unit_diagonal_and_symmetric_f(held_out, metric) -> None:
    texts = held_out[0] + held_out[1]
    s = metric.pairwise(texts, texts)
    for name in ("precision", "recall", "f1"):
        assert torch.allclose(s[name].diagonal(), torch.ones(len(texts)), atol=1e-5), name
    # (i, j) and (j, i) come from different tile products, whose sums may round apart in the last bit
    assert torch.allclose(s["f1"], s["f1"].T, rtol=0, atol=1e-6)
    assert torch.allclose(s["precision"], s["recall"].T, rtol=0, atol=1e-6)


def test_the_method_reuses_the_model_and_leaves_the_state_alone(held_out, metric, monkeypatch) -> None:
    cands, refs = held_out
    monkeypatch.setattr(
        "bertscore_tm.models.encoder.load_encoder", lambda *a, **k: pytest.fail("the model was loaded again")
    )
    metric.reset()
    metric.update(cands[:3], refs[:3])
    state = {k: [t.clone() for t in v] if isinstance(v, list) else v.clone() for k, v in metric.metric_state.items()}
    before = metric.embedder.rows_embedded
    s = metric.pairwise(cands, refs)
    distinct = len(set(cands) | set(refs))
    assert metric.embedder.rows_embedded - before == distinct  # each distinct text once
    for k, v in metric.metric_state.items():
        assert (
            all(torch.equal(a, b) for a, b in zip(v, state[k], strict=True))
            if isinstance(v, list)
            else torch.equal(v, state[k])
        ), k
    assert torch.equal(metric.compute()["f1"], s["f1"].diagonal()[:3])  # one kernel: the paired scores' bits


@pytest.mark.parametrize("keep_share", [None, 0.0], ids=["stream kept, embedded with the store", "stream after store"])
def test_tiles_and_chunks_do_not_change_the_scores(held_out, metric, monkeypatch, keep_share) -> None:
    cands, refs = held_out
    whole = metric.pairwise(cands, refs)
    monkeypatch.setattr(pw, "tile_tokens_for", lambda sim_bytes, rows: 40)  # a text or two per tile
    monkeypatch.setattr(metric.embedder, "_max_tokens", 32)  # streamed 64 tokens at a time
    if keep_share is not None:
        monkeypatch.setattr(pw, "KEEP_SHARE", keep_share)
    before = metric.embedder.rows_embedded
    tiled = metric.pairwise(cands, refs + cands[:2])  # two candidates also in the store
    assert metric.embedder.rows_embedded - before == len(set(cands) | set(refs))
    for name in ("precision", "recall", "f1"):
        assert torch.equal(tiled[name][:, : len(refs)], whole[name]), name
    assert torch.allclose(tiled["f1"][[0, 1], [len(refs), len(refs) + 1]], torch.ones(2), atol=1e-5)  # themselves


def test_weights_summing_to_zero_give_nan_and_one_warning_counting_the_pairs() -> None:
    # with IDF over two copies of one reference, its every token weighs 0: recall is NaN, F is 0
    with pytest.warns(UserWarning, match="^4 pair"):
        s = pairwise_bert_score(["the cat", "a dog"], ["the cat", "the cat"], MINILM, idf=True)
    assert bool(s["recall"].isnan().all()) and bool((s["f1"] == 0).all())
    assert not bool(s["precision"][1].isnan().any())  # "a dog" has tokens the references lack


def test_output_and_hash_settings_apply(held_out) -> None:
    cands, refs = held_out
    f1 = pairwise_bert_score(cands[:2], refs[:3], MINILM, output="f1")
    assert isinstance(f1, torch.Tensor) and f1.shape == (2, 3)


# -- MBR --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def groups(wmt: dict[str, list[str]]) -> list[list[str]]:
    """Groups of 1 to 5 hypotheses: translations of one source with a few others mixed in."""
    h, r = wmt["hyps_long"], wmt["refs_long"]
    return [
        [h[1050]],
        [h[1051], r[1051], h[1060]],
        [r[1052], h[1052], h[1053], r[1052][: len(r[1052]) // 2]],
        [h[1054], h[1070], r[1054], r[1071], " ".join(h[1054].split()[:-2])],
    ]


def brute_force_mbr(groups, reference_score, references=None, idf_of=None):
    """The reference scores the expanded pairs of each group; mean F1 per hypothesis, first best."""
    chosen, utilities = [], []
    for g, group in enumerate(groups):
        pseudo = group if references is None else references[g]
        pairs = [
            (i, h, r) for i, h in enumerate(group) for j, r in enumerate(pseudo) if references is not None or j != i
        ]
        kwargs = {} if idf_of is None else {"idf": idf_of(pseudo)}
        f = (
            reference_score([h for _, h, _ in pairs], [r for _, _, r in pairs], batch_size=1, **kwargs)[2].tolist()
            if pairs
            else []
        )
        u = []
        for i in range(len(group)):
            values = [x for (k, _, _), x in zip(pairs, f, strict=True) if k == i]
            u.append(math.fsum(values) / len(values) if values else math.nan)
        chosen.append(0 if len(group) == 1 else max(range(len(group)), key=lambda i: (u[i], -i)))
        utilities.append(u)
    return chosen, utilities


def assert_same_choice(ours, theirs) -> None:
    (ours_chosen, ours_u), (chosen, u) = ours, theirs
    assert ours_chosen == chosen
    for a, b in zip(ours_u, u, strict=True):
        assert torch.allclose(a, torch.tensor(b, dtype=torch.float64), atol=TOL, equal_nan=True), (a, b)
        if len(b) > 1:  # the choice is not a near tie: the comparison means something
            top = sorted(b, reverse=True)
            assert top[0] - top[1] > 1e-4


@pytest.mark.slow
def test_mbr_picks_what_a_brute_force_loop_picks(groups, reference_score) -> None:
    ours = mbr_select(groups, MINILM, return_utilities=True)
    assert_same_choice(ours, brute_force_mbr(groups, reference_score))
    assert ours[0][0] == 0 and math.isnan(float(ours[1][0][0]))  # a group of one: 0, no other hypothesis


@pytest.mark.slow
def test_mbr_with_idf_over_each_groups_hypotheses(groups, reference_score, minilm_path, metric) -> None:
    from bert_score.utils import get_idf_dict, get_tokenizer

    tokenizer = get_tokenizer(minilm_path, use_fast=True)
    idf_metric = BERTScore(MINILM, idf=True)
    ours = idf_metric.mbr_select(groups[1:], return_utilities=True)
    theirs = brute_force_mbr(groups[1:], reference_score, idf_of=lambda refs: get_idf_dict(refs, tokenizer, nthreads=0))
    assert_same_choice(ours, theirs)


@pytest.mark.slow
def test_mbr_with_separate_pseudo_references(groups, reference_score, wmt, metric) -> None:
    r = wmt["refs_long"]
    references = [[r[1050]], [r[1051], r[1090]], [r[1052]], [r[1054], r[1054], r[1080]]]
    ours = metric.mbr_select(groups, references=references, return_utilities=True)
    assert_same_choice(ours, brute_force_mbr(groups, reference_score, references=references))


def test_mbr_ties_go_to_the_lowest_index(metric) -> None:
    a, b = "The committee approved the budget.", "The budget was approved by the committee."
    chosen, u = metric.mbr_select([[b, a, a], [a, a], [a, b, b]], return_utilities=True)
    assert chosen == [1, 0, 1]
    assert float(u[0][1]) == float(u[0][2]) and float(u[1][0]) == float(u[1][1])


@pytest.mark.slow
def test_mbr_batches_groups_and_embeds_each_text_once(wmt, metric, monkeypatch) -> None:
    """100 groups of 5 short texts: a handful of forward passes, not one per group; the same choices as
    with one group at a time and with each group matched in tiles of its own."""
    lines = [" ".join(line.split()[:8]) for line in wmt["hyps_long"][2000:2100] + wmt["refs_long"][2000:2100]]
    groups = [[lines[(g * 7 + i * 13) % len(lines)] for i in range(5)] for g in range(100)]
    calls = []
    original = metric.embedder.embed_batch
    monkeypatch.setattr(
        metric.embedder, "embed_batch", lambda seqs, out=None: calls.append(len(seqs)) or original(seqs, out)
    )
    chosen, u = metric.mbr_select(groups, return_utilities=True)
    ids = {tuple(metric.token_ids(t).tolist()) for group in groups for t in group}
    distinct, lengths = len(ids), len({len(x) for x in ids})
    # forward batches hold texts of one length (never padded): about one batch per length, not one per group
    assert sum(calls) == distinct and len(calls) <= 2 * lengths, (calls, lengths)
    from bertscore_tm.engines.mbr import select

    # every group in tiles of its own, blocks of a few groups (texts kept aside for later blocks)
    calls.clear()
    tiled, u_tiled = select(
        metric.scorer, metric.device, groups, return_utilities=True, sim_bytes=5_000, block_tokens=300
    )
    assert sum(calls) == distinct
    assert tiled == chosen
    assert all(torch.equal(a, b) for a, b in zip(u, u_tiled, strict=True))
    one_by_one = [metric.mbr_select([group], return_utilities=True) for group in groups[:10]]
    assert [c[0] for c, _ in one_by_one] == chosen[:10]
    assert all(torch.equal(a, c[0]) for a, (_, c) in zip(u[:10], one_by_one, strict=True))


# -- bad input: clear errors before any model is loaded ------------------------------------------------------


BAD_PAIRWISE = [
    (([], ["a"]), ValueError, "cands is empty"),
    ((["a"], []), ValueError, "refs is empty"),
    ((["a", 3], ["b"]), TypeError, r"cands\[1\] must be a string, got int"),
    ((["a"], ["b", None]), TypeError, r"refs\[1\] must be a string, got NoneType"),
    ((5, ["a"]), TypeError, "cands must be a string or a sequence of strings"),
]


@pytest.mark.parametrize(("args", "error", "match"), BAD_PAIRWISE)
def test_bad_pairwise_input(args, error, match) -> None:
    with pytest.raises(error, match=match):
        pairwise_bert_score(*args, NO_MODEL, num_layers=3)


def test_pairwise_rejects_a_reduction() -> None:
    with pytest.raises(ValueError, match="does not use reduction"):
        pairwise_bert_score(["a"], ["b"], NO_MODEL, num_layers=3, reduction="mean")


BAD_MBR = [
    (([],), {}, ValueError, "groups is empty"),
    (([["a"], []],), {}, ValueError, r"groups\[1\] is empty: pass at least one hypothesis"),
    (([["a", 1]],), {}, TypeError, r"groups\[0\]\[1\] must be a string, got int"),
    (([b"abc"],), {}, TypeError, r"groups\[0\] must be a string or a sequence of strings, got bytes"),
    (([["a"]],), {"references": [["b"], ["c"]]}, ValueError, "references has 2 groups but groups has 1"),
    (([["a"]],), {"references": [[]]}, ValueError, r"references\[0\] is empty"),
    (([["a"]],), {"all_layers": True}, ValueError, "does not use all_layers"),
]


@pytest.mark.parametrize(("args", "kwargs", "error", "match"), BAD_MBR)
def test_bad_mbr_input(args, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        mbr_select(*args, NO_MODEL, num_layers=3, **kwargs)


def test_the_methods_check_their_input_too(metric) -> None:
    with pytest.raises(ValueError, match="refs is empty"):
        metric.pairwise(["a"], [])
    with pytest.raises(ValueError, match=r"groups\[0\] is empty"):
        metric.mbr_select([[]])


# -- the command line -----------------------------------------------------------------------------------


def _rows(text: str) -> torch.Tensor:
    return torch.tensor(
        [[float(x) for x in line.split("\t")] for line in text.strip("\n").split("\n")], dtype=torch.float64
    )


@pytest.mark.slow
def test_cli_pairwise_tsv_round_trip(tmp_path: Path, wmt) -> None:
    out = tmp_path / "matrix.tsv"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bertscore_tm",
            "pairwise",
            "-c",
            str(WMT / "hyps.txt"),
            "-r",
            str(WMT / "refs.txt"),
            "-m",
            MINILM,
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Wrote the 10 x 10 F1 matrix (") and str(out) in proc.stdout
    expected = pairwise_bert_score(wmt["hyps"], wmt["refs"], MINILM)["f1"].double()
    assert torch.allclose(_rows(out.read_text()), expected, atol=1e-7, rtol=0)  # full precision


@pytest.mark.slow
def test_cli_pairwise_json(capsys, wmt) -> None:
    assert (
        main(
            [
                "pairwise",
                "-c",
                str(WMT / "hyps.txt"),
                "-r",
                str(WMT / "refs2.txt"),
                "-m",
                MINILM,
                "--idf",
                "--format",
                "json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    expected = pairwise_bert_score(wmt["hyps"], wmt["refs2"], MINILM, idf=True, return_hash=True)
    assert doc["hash"] == expected["hash"] and (doc["candidates"], doc["references"]) == (10, 10)
    for name in ("precision", "recall", "f1"):
        assert torch.allclose(
            torch.tensor(doc[name], dtype=torch.float64), expected[name].double(), atol=1e-7, rtol=0
        ), name


@pytest.mark.slow
def test_cli_mbr_by_group_size_and_by_group_file(capsys, tmp_path: Path, wmt) -> None:
    lines = wmt["hyps"] + wmt["refs"]  # 20 lines
    hyps = tmp_path / "hyps.txt"
    hyps.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["mbr", "-i", str(hyps), "--group-size", "4", "-m", MINILM]) == 0
    groups = [lines[i : i + 4] for i in range(0, 20, 4)]
    chosen = mbr_select(groups, MINILM)
    assert capsys.readouterr().out == "".join(g[c] + "\n" for g, c in zip(groups, chosen, strict=True))

    ids = tmp_path / "ids.txt"
    names = ["b" if i % 3 else "a" for i in range(20)]  # lines 1, 4, 7... form group a, the others b
    ids.write_text("\n".join(names) + "\n", encoding="utf-8")
    assert main(["mbr", "-i", str(hyps), "--groups", str(ids), "-m", MINILM, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    members = [[i for i in range(20) if names[i] == n] for n in ("a", "b")]
    chosen, utilities = mbr_select([[lines[i] for i in m] for m in members], MINILM, return_utilities=True)
    assert [g["group"] for g in doc["groups"]] == ["a", "b"]
    for g, m, c, u in zip(doc["groups"], members, chosen, utilities, strict=True):
        assert g["index"] == c and g["line"] == m[c] + 1 and g["hypothesis"] == lines[m[c]]
        assert g["lines"] == [i + 1 for i in m]
        assert torch.allclose(torch.tensor(g["utilities"], dtype=torch.float64), u, atol=1e-7, rtol=0)


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, str]:
    out = {}
    for name, lines in {
        "ten": [f"Sentence number {i}." for i in range(10)],
        "three": ["a", "b", "c"],
        "empty": [],
        "blank_id": ["x", "", "x"],
    }.items():
        path = tmp_path / f"{name}.txt"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        out[name] = str(path)
    out["missing"] = str(tmp_path / "missing.txt")
    out["nodir"] = str(tmp_path / "nodir" / "m.tsv")
    out["dir"] = str(tmp_path)
    return out


CLI_ERRORS = [
    (["pairwise", "-c", "{missing}", "-r", "{ten}"], ["candidate file", "missing.txt", "does not exist"]),
    (["pairwise", "-c", "{ten}", "-r", "{empty}"], ["reference file", "empty.txt", "is empty"]),
    (["pairwise", "-c", "{ten}", "-r", "{three}", "-o", "{nodir}"], ["cannot write", "does not exist"]),
    (["pairwise", "-c", "{ten}", "-r", "{three}", "-o", "{dir}"], ["cannot write", "it is a folder"]),
    (["pairwise", "-c", "{ten}", "-r", "{three}", "-m", NO_MODEL, "-l", "3"], ["not on this machine"]),
    (["mbr", "-i", "{ten}", "--group-size", "3"], ["has 10 lines", "--group-size 3 does not divide", "would have 1"]),
    (["mbr", "-i", "{ten}", "--group-size", "0"], ["--group-size must be at least 1, got 0"]),
    (["mbr", "-i", "{ten}", "--groups", "{three}"], ["group id file", "has 3 lines", "has 10 lines"]),
    (["mbr", "-i", "{three}", "--groups", "{blank_id}"], ["blank_id.txt, line 2", "blank"]),
    (["mbr", "-i", "{empty}", "--group-size", "2"], ["hypothesis file", "is empty"]),
    (["mbr", "-i", "{ten}", "--group-size", "5", "-m", NO_MODEL, "-l", "3"], ["not on this machine"]),
]


@pytest.mark.parametrize(("args", "words"), CLI_ERRORS, ids=[" ".join(a) for a, _ in CLI_ERRORS])
def test_cli_mistakes_are_one_line_exit_2(capsys, files, args, words) -> None:
    rc = main([a.format(**files) for a in args])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    lines = err.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("bertscore-tm: error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])


def test_cli_help_does_not_import_torch() -> None:
    code = (
        "import sys\nfrom bertscore_tm.cli import main\n"
        "for cmd in ('pairwise', 'mbr'):\n"
        "    try:\n        main([cmd, '--help'])\n    except SystemExit:\n        pass\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "--group-size" in proc.stdout and "--format" in proc.stdout


def _env() -> dict[str, str]:
    import os

    import bertscore_tm

    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    root = str(Path(bertscore_tm.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env
