"""The mbrs door with mbrs 0.1.8 itself (no mocks): the metric found by name in mbrs's registry, its calls those
of mbrs's README and docstrings with the model swapped for the packaged MiniLM; its matrices equal bert-score
0.3.13 run unpadded (batch_size=1) to 1e-5, and the choices of mbrs's decoders (in Python and from
``mbrs-decode`` with a YAML config and the plug-in folder) equal `bertscore_tm.engines.mbr_select`'s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("mbrs")

from mbrs.decoders import get_decoder
from mbrs.metrics import MetricCacheable, get_metric
from transformers import AutoTokenizer

from bertscore_tm import PACKAGED_MINILM, BERTScore
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError
from bertscore_tm.integrations.mbrs import NAME, plugin_dir
from bertscore_tm.resources import data_dir

REPO = Path(__file__).resolve().parents[2]
BASELINE = str(data_dir("baselines") / "en" / "sentence-transformers" / "all-MiniLM-L6-v2.tsv")
TOL = 1e-5


def make(**config):
    cls = get_metric(NAME)
    return cls(cls.Config(model_type=PACKAGED_MINILM, **config))


@pytest.fixture(scope="module")
def metric():
    return make()


@pytest.fixture(scope="module")
def ours():
    """Our own metric, for `mbr_select` (one model for every test)."""
    return BERTScore(PACKAGED_MINILM)


@pytest.fixture(scope="module")
def groups(wmt):
    """Candidate translations of each WMT line: its hypothesis, its two references, and the next line's
    hypothesis (an outlier)."""
    h, r, r2 = wmt["hyps"], wmt["refs"], wmt["refs2"]
    return [[h[i], r[i], r2[i], h[(i + 1) % 10]] for i in range(10)]


@pytest.fixture(scope="module")
def tokenizer(minilm_path):
    return AutoTokenizer.from_pretrained(minilm_path)


def reference_matrices(reference_score, pairs, **kwargs):
    """bert-score's F (or `kwargs`' score) of every (hypotheses, references) block, unpadded, as [H, R] each."""
    cands = [h for hyps, refs in pairs for h in hyps for _ in refs]
    refs = [r for hyps, refs in pairs for _ in hyps for r in refs]
    p, r, f = reference_score(cands, refs, batch_size=1, **kwargs)
    out, start = [], 0
    for hyps, group_refs in pairs:
        size = len(hyps) * len(group_refs)
        out.append(torch.stack([p, r, f])[:, start : start + size].reshape(3, len(hyps), len(group_refs)))
        start += size
    return out


def test_found_by_name_and_cacheable(metric):
    assert get_metric(NAME) is type(metric)
    assert isinstance(metric, MetricCacheable) and metric.HIGHER_IS_BETTER
    assert metric.embed_dim == 384 and metric.device.type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_pairwise_scores_equal_the_reference(metric, groups, reference_score):
    hyps, refs = groups[0], groups[1][:3]  # H x R with other references
    *expected, theirs = reference_matrices(reference_score, [*((g, g) for g in groups[:3]), (hyps, refs)])
    for group, block in zip(groups[:3], expected, strict=True):
        assert (metric.pairwise_scores(group, group) - block[2]).abs().max() <= TOL
    for score_type, row in (("precision", 0), ("recall", 1), ("f1", 2)):
        ours = make(score_type=score_type).pairwise_scores(hyps, refs)
        assert ours.shape == (4, 3) and (ours - theirs[row]).abs().max() <= TOL, score_type


def test_idf_rescaling_and_fp_settings(groups, reference_score, tokenizer):
    from bert_score.utils import get_idf_dict

    hyps, refs = groups[0], groups[1]
    idf_sents = [t for g in groups for t in g]
    fixed = make(idf=True, idf_sents=idf_sents).pairwise_scores(hyps, refs)
    (theirs,) = reference_matrices(reference_score, [(hyps, refs)], idf=get_idf_dict(idf_sents, tokenizer, nthreads=0))
    assert (fixed - theirs[2]).abs().max() <= TOL
    counted = make(idf=True).pairwise_scores(hyps, refs)  # IDF over this call's references
    (theirs,) = reference_matrices(reference_score, [(hyps, refs)], idf=get_idf_dict(refs, tokenizer, nthreads=0))
    assert (counted - theirs[2]).abs().max() <= TOL
    rescaled = make(lang="en", rescale_with_baseline=True).pairwise_scores(hyps, refs)
    (theirs,) = reference_matrices(
        reference_score, [(hyps, refs)], lang="en", rescale_with_baseline=True, baseline_path=BASELINE
    )
    assert (rescaled - theirs[2]).abs().max() <= TOL


def test_the_readme_mbr_decoding_chooses_as_mbr_select(metric, ours, groups):
    """mbrs's README: a decoder over the metric, the hypotheses their own pseudo-references."""
    decoder_cls = get_decoder("mbr")
    decoder = decoder_cls(decoder_cls.Config(), metric)
    chosen, utilities = ours.mbr_select(groups, references=groups, return_utilities=True)
    assert ours.mbr_select(groups) == chosen  # itself among the references or not, the same choice
    for group, ours, utility in zip(groups, chosen, utilities, strict=True):
        output = decoder.decode(group, group, nbest=1)
        assert output.idx == [ours]
        assert output.score[0] == pytest.approx(float(utility[ours]), abs=1e-6)
        assert (metric.expected_scores(group, group).double() - utility).abs().max() <= 1e-6


def test_reference_lprobs_weigh_the_expectation(metric, groups):
    group = groups[4]
    lprobs = torch.tensor([-0.5, -1.0, -2.0, -0.1])
    weights = torch.softmax(lprobs.double(), dim=0)
    matrix = metric.pairwise_scores(group, group).double()
    expected = (matrix * weights).sum(dim=1)
    assert (metric.expected_scores(group, group, reference_lprobs=lprobs).double() - expected).abs().max() <= 1e-6


def test_cached_decoders_use_the_texts_cache(metric, ours, groups):
    """Pruning MBR encodes once and slices the cache by tensors; with every reference in its first step it
    computes the full expectation, so it chooses as MBR."""
    decoder_cls = get_decoder("pruning_mbr")
    decoder = decoder_cls(decoder_cls.Config(sampling_scheduler=[4]), metric)
    chosen = ours.mbr_select(groups)
    assert [decoder.decode(g, g, nbest=1).idx[0] for g in groups] == chosen
    cache = metric.encode(groups[0])
    assert cache[torch.tensor([True, False, True, False])].texts == [groups[0][0], groups[0][2]]
    assert cache[torch.tensor([3, 1])].texts == [groups[0][3], groups[0][1]] and len(cache.repeat(2)) == 8


def test_scores_and_corpus_score_are_paired(metric, wmt, reference_score):
    hyps, refs, refs2 = wmt["hyps"], wmt["refs"], wmt["refs2"]
    _, _, both = reference_score(hyps + hyps, refs + refs2, batch_size=1)
    f, f2 = both[:10], both[10:]
    assert (metric.scores(hyps, refs) - f).abs().max() <= TOL
    assert metric.score(hyps[0], refs[0]) == pytest.approx(float(f[0]), abs=TOL)
    corpus = metric.corpus_score(hyps, [refs, refs2])  # mbrs's meaning: the mean over every reference set
    assert corpus == pytest.approx(float(torch.cat([f, f2]).double().mean()), abs=TOL)


def test_mbrs_decode_with_a_yaml_config_and_the_plugin_folder(ours, groups, tmp_path):
    (tmp_path / "hyps.txt").write_text("".join(f"{t}\n" for g in groups for t in g), encoding="utf-8")
    (tmp_path / "mbr.yaml").write_text(
        "common:\n  hypotheses: hyps.txt\n  num_candidates: 4\n  decoder: mbr\n  metric: bertscore_tm\n"
        "  format: json\n  output: out.jsonl\n  quiet: true\n"
        f"metric:\n  model_type: {PACKAGED_MINILM}\n  num_layers: 5\n  nthreads: 1\n",
        encoding="utf-8",
    )
    command = [str(Path(sys.executable).with_name("mbrs-decode")), "--config_path", "mbr.yaml"]
    command += ["--plugin_dir", plugin_dir()]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [line["selected_idx"] for line in lines] == ours.mbr_select(groups)


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda m: m.pairwise_scores(["a"], ["b"], "a source"), ArgumentValueError, "BERTScore takes no source"),
        (lambda m: m.expected_scores(["a"], ["b"], "a source"), ArgumentValueError, "BERTScore takes no source"),
        (lambda m: m.scores(["a", "b"], ["c"]), ValueError, "same length"),
        (lambda m: m.scores(["a"], [None]), TypeError, "must be a string"),
        (lambda m: m.corpus_score(["a", "b"], [["c"]]), ValueError, "same length"),
    ],
)
def test_bad_calls_are_a_clear_error(metric, call, error, words):
    with pytest.raises(error) as raised:
        call(metric)
    assert words in str(raised.value)


@pytest.mark.parametrize(
    ("config", "error", "words"),
    [
        ({"fp16": True, "bf16": True}, ArgumentValueError, "fp16 and bf16 are both set"),
        ({"idf_sents": ["a b"]}, ArgumentValueError, "idf"),
        ({"nthreads": -2}, ArgumentValueError, "nthreads must be an integer >= 0"),
        ({"num_layers": 99}, ArgumentValueError, "num_layers must be between 0 and 6"),
        ({"use_fast_tokenizer": 1}, ArgumentTypeError, "use_fast_tokenizer must be True or False"),
        ({"score_type": "f2"}, ArgumentValueError, "score_type must be precision, recall or f1"),
    ],
)
def test_bad_configurations_are_a_clear_error(config, error, words):
    with pytest.raises(error) as raised:
        make(**config)
    assert words in str(raised.value)
