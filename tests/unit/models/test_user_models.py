"""Bring your own model: model and tokenizer objects, a custom forward, IDF from a corpus or from weights.

- A model object scores exactly as the same weights loaded from disk, and is left as it was: same blocks, same
  parameter storage, requires_grad, dtype, device and train flags, same full forward; in train mode it still
  scores deterministically (dropout off). Scoring never moves it; moving the metric moves the whole object.
- It is never in the metric's parameters or state_dict, so a module holding both the model and the metric
  lists the model's parameters once.
- `forward_fn` gives what the standard forward gives when it returns the same layer; a wrong shape is an error.
- `idf_texts` equals bert-score 0.3.13's `BERTScorer(idf=True, idf_sents=...)`; under DDP the corpus is counted
  once, not summed across ranks (two gloo processes). `idf_weights` round-trips through `metric.idf_weights()`
  and JSON, and takes bert-score's own `idf_dict`.
- ModernBERT, EuroBERT and DeBERTa-v3 (tiny random models): layer k is hidden_states[k] of the whole model, so
  single-layer scores equal the all_layers rows and an independent float64 computation, on texts longer than
  512 tokens; each gets its own window.
- Bad input is a clear error when the metric is built, before any text is scored.

Held-out text: WMT lines 2000-2100 of hyps_long/refs_long, which no other test uses.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import warnings
from collections import defaultdict

import pytest
import torch
from torch import nn

import bertscore_tm.models.encoder
from bertscore_tm import BERTScore, bert_score, score
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError, ModelSetupError
from tests.spawn import process_group, run_ranks, save_rank
from tiny_models import MODERN, build_tiny_model

TOL = 1e-5  # against the reference and float64
SAME = 1e-6  # the same weights from an object and from a path
LAYER = 5
KEYS = ("precision", "recall", "f1")


@pytest.fixture(scope="module", autouse=True)
def two_threads():
    threads = torch.get_num_threads()
    torch.set_num_threads(min(threads, 2))
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def held_out(wmt) -> dict[str, list[str]]:
    """Pairs 2000-2023 to score, and lines 2024-2100 of both sides as an IDF corpus of their own."""
    hyps, refs = wmt["hyps_long"], wmt["refs_long"]
    return {"cands": hyps[2000:2024], "refs": refs[2000:2024], "corpus": refs[2024:2100] + hyps[2024:2100]}


def load_minilm(path: str, train: bool = True):
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(path)
    return (model.train() if train else model.eval()), AutoTokenizer.from_pretrained(path)


@pytest.fixture(scope="module")
def minilm(minilm_path):
    """The packaged MiniLM as objects, the model in train mode (dropout 0.1): shared by the tests that only read."""
    return load_minilm(minilm_path)


def run(metric: BERTScore, cands, refs) -> dict[str, torch.Tensor]:
    metric.update(cands, refs)
    return {k: v for k, v in metric.compute().items() if k in KEYS}


def assert_scores(actual: dict, expected: dict, tol: float) -> None:
    for key in KEYS:
        a, e = actual[key], expected[key]
        assert a.shape == e.shape, key
        torch.testing.assert_close(a.double(), e.double(), atol=tol, rtol=0, msg=key)


# -- a model object equals the same weights from disk, and is left as it was ----------------------------------


SETTINGS = {
    "layer 5": {},
    "all layers": {"all_layers": True},
    "idf over the references": {"idf": True},
}


@pytest.mark.slow
@pytest.mark.parametrize("setting", SETTINGS)
def test_a_model_object_scores_as_the_same_weights_from_disk(setting, minilm, minilm_path, held_out):
    model, tokenizer = minilm
    kwargs = SETTINGS[setting]
    cands, refs = held_out["cands"], held_out["refs"]
    from_disk = run(BERTScore(minilm_path, num_layers=LAYER, **kwargs), cands, refs)
    from_object = run(BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER, **kwargs), cands, refs)
    assert_scores(from_object, from_disk, SAME)


def _snapshot(model: nn.Module) -> dict:
    return {
        "modules": [(name, type(m).__name__, m.training) for name, m in model.named_modules()],
        "parameters": [
            (n, p.data_ptr(), p.dtype, p.device, p.requires_grad, p.grad) for n, p in model.named_parameters()
        ],
        "buffers": [(n, b.data_ptr(), b.dtype, b.device) for n, b in model.named_buffers()],
        "hooks": [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in model.modules()],
        "config": model.config.to_dict(),
    }


@pytest.mark.slow
def test_the_users_model_is_left_as_it_was(minilm_path, held_out):
    model, tokenizer = load_minilm(minilm_path)
    model.embeddings.requires_grad_(False)  # a partly frozen model: neither flag may change
    batch = tokenizer(held_out["cands"][:3], padding=True, return_tensors="pt")
    model.eval()
    with torch.no_grad():
        own_before = model(**batch, output_hidden_states=True)
    model.train()
    before = _snapshot(model)
    cands, refs = held_out["cands"][:8], held_out["refs"][:8]

    for kwargs in ({}, {"all_layers": True}, {"model_dtype": torch.bfloat16}, {"idf": True}):
        metric = BERTScore(model=model, tokenizer=tokenizer, num_layers=2, **kwargs)
        metric(cands[:4], refs[:4])  # forward()
        result = run(metric, cands, refs)
        assert not any(v.requires_grad for v in result.values())
    assert _snapshot(model) == before  # same blocks, storage, dtypes, devices, requires_grad, train flags, hooks
    assert len(model.encoder.layer) == 6 and all(p.grad is None for p in model.parameters())

    model.eval()
    with torch.no_grad():
        own_after = model(**batch, output_hidden_states=True)
    assert len(own_after.hidden_states) == 7
    assert torch.equal(own_after.last_hidden_state, own_before.last_hidden_state)


@pytest.mark.slow
def test_a_model_in_train_mode_scores_deterministically(minilm, minilm_path, held_out):
    model, tokenizer = minilm
    assert model.training and model.config.hidden_dropout_prob > 0
    cands, refs = held_out["cands"][:8], held_out["refs"][:8]
    metric = BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER)
    first = run(metric, cands, refs)
    metric.reset()
    assert_scores(run(metric, cands, refs), first, 0.0)
    model.eval()
    try:  # what the model gives in eval mode, by its own forward
        assert_scores(run(BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER), cands, refs), first, 0.0)
    finally:
        model.train()


def test_later_blocks_are_not_computed(minilm):
    model, tokenizer = minilm
    ran = []
    blocks = model.encoder.layer
    hooks = [block.register_forward_hook(lambda m, i, o, k=k: ran.append(k)) for k, block in enumerate(blocks)]
    try:
        run(BERTScore(model=model, tokenizer=tokenizer, num_layers=2), ["a cat sat on the mat"], ["the cat sat"])
    finally:
        for hook in hooks:
            hook.remove()
    # every forward pass ran blocks 0 and 1 only (the two texts differ in length: a batch each, never padded)
    assert ran and ran == [0, 1] * (len(ran) // 2)


def test_the_view_runs_on_the_tensors_the_model_holds_at_each_call(tiny):
    """The view looks the user's tensors up by name at every call: a weight the user replaces after the metric
    was built (a new tensor object, as an optimiser or a conversion may leave) is the one that scores."""
    from transformers import AutoModel, AutoTokenizer

    path = tiny("bert")
    model, tokenizer = AutoModel.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    cands, refs = ["a cat sat on the mat", "the dog"], ["the cat sat", "a dog ran"]
    before = run(BERTScore(model=model, tokenizer=tokenizer, num_layers=2), cands, refs)
    early = BERTScore(model=model, tokenizer=tokenizer, num_layers=2)
    table = model.embeddings.word_embeddings
    table.weight = nn.Parameter(table.weight.detach().flip(0))
    got, want = run(early, cands, refs), run(BERTScore(model=model, tokenizer=tokenizer, num_layers=2), cands, refs)
    assert_scores(got, want, 0.0)
    assert not torch.equal(got["f1"], before["f1"])


def test_neither_scoring_nor_moving_the_metric_moves_or_copies_the_model(tiny):
    """The user owns the object (a LightningModule that holds it moves it as its submodule): scoring, all pairs
    and MBR run it where it is, and moving the metric or casting it moves its states alone."""
    from transformers import AutoModel, AutoTokenizer

    # an encoder-decoder: the encoder scores, and the whole object (decoder too) stays where it is
    path = tiny("bart")
    model, tokenizer = AutoModel.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    metric = BERTScore(model=model, tokenizer=tokenizer, num_layers=2)
    moves = []
    original_apply = model._apply
    model._apply = lambda *a, **k: moves.append(a) or original_apply(*a, **k)  # type: ignore[method-assign]
    run(metric, ["a cat sat on the mat"], ["the cat sat"])
    metric.pairwise(["a cat sat on the mat"], ["the cat sat", "a dog"])
    metric.mbr_select([["a cat sat on the mat", "the cat sat", "a dog"]])
    metric.to("meta")
    assert metric.scorer.follow(metric.device) == torch.device("cpu")  # it runs where it is
    metric.set_dtype(torch.float64)
    assert moves == [] and {p.device.type for p in model.parameters()} == {"cpu"}
    assert len(metric.scorer.handle.embedders) == 1  # never copied


def test_a_module_holding_the_model_and_the_metric_lists_the_model_once(minilm):
    model, tokenizer = minilm

    class Holder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = model
            self.metric = BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER)

    holder = Holder()
    own = {f"encoder.{n}" for n, _ in model.named_parameters()}
    assert {n for n, _ in holder.named_parameters()} == own
    assert len(list(holder.parameters())) == len(own)
    assert not list(holder.metric.parameters()) and not list(holder.metric.buffers())
    # the metric's extra state: the digests of its setting (no weights, and no states unless persistent)
    assert set(holder.state_dict()) == {f"encoder.{n}" for n in model.state_dict()} | {"metric._extra_state"}


def test_the_hash_code_names_the_model_or_says_it_is_user_supplied(minilm, tiny):
    from transformers import AutoTokenizer, BertConfig, BertModel

    model, tokenizer = minilm
    metric = BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER, idf=True)
    assert metric.hash_code.startswith("user-supplied-BertModel_L5_idf_version=")
    custom = BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER, forward_fn=lambda m, i, a: m(i, a)[0])
    assert custom.hash_code.startswith("user-supplied-BertModel-custom-forward_L5_")
    # a config naming a model of configs/models.json: its name and its tuned layer
    tiny_tokenizer = AutoTokenizer.from_pretrained(tiny("bert"))
    named = BertModel(
        BertConfig(
            vocab_size=len(tiny_tokenizer),
            hidden_size=32,
            num_hidden_layers=12,
            num_attention_heads=2,
            intermediate_size=37,
            name_or_path="bert-base-uncased",
        )
    )
    known = BERTScore(model=named, tokenizer=tiny_tokenizer)
    assert known.num_layers == 9 and known.hash_code.startswith("bert-base-uncased_L9_no-idf_")


# -- forward_fn ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_forward_fn_equals_the_standard_forward(minilm, held_out):
    model, tokenizer = minilm
    cands, refs = held_out["cands"], held_out["refs"]

    def layer_three(m, input_ids, attention_mask):
        return m(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True).hidden_states[3]

    def every_layer(m, input_ids, attention_mask):
        out = m(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
        return torch.stack(out.hidden_states, dim=2)

    standard = run(BERTScore(model=model, tokenizer=tokenizer, num_layers=3), cands, refs)
    assert_scores(
        run(BERTScore(model=model, tokenizer=tokenizer, num_layers=3, forward_fn=layer_three), cands, refs),
        standard,
        SAME,
    )
    every = BERTScore(model=model, tokenizer=tokenizer, all_layers=True, forward_fn=every_layer)
    assert every.model_depth == 6
    standard_all = run(BERTScore(model=model, tokenizer=tokenizer, all_layers=True), cands, refs)
    assert_scores(run(every, cands, refs), standard_all, SAME)


def test_forward_fn_gets_the_eval_mode_model_and_runs_without_grad(minilm):
    model, tokenizer = minilm
    seen = []

    def spy(m, input_ids, attention_mask):
        seen.append((m.training, torch.is_inference_mode_enabled(), type(m).__name__))
        return m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    run(BERTScore(model=model, tokenizer=tokenizer, num_layers=6, forward_fn=spy), ["a b c"], ["a b d"])
    assert seen and all(s == (False, True, "BertModel") for s in seen)
    assert model.training


@pytest.mark.parametrize(
    ("all_layers", "forward_fn"),
    [
        (False, lambda m, i, a: m(input_ids=i, attention_mask=a).pooler_output),  # [B, D]
        (False, lambda m, i, a: m(input_ids=i, attention_mask=a)),  # the output object
        (False, lambda m, i, a: m(input_ids=i, attention_mask=a).last_hidden_state[:, :1]),  # first token only
        (True, lambda m, i, a: m(input_ids=i, attention_mask=a).last_hidden_state),  # no layer axis
    ],
    ids=["pooled", "output object", "first token", "no layer axis"],
)
def test_a_forward_fn_of_the_wrong_shape_is_refused_when_the_metric_is_built(minilm, all_layers, forward_fn):
    model, tokenizer = minilm
    with pytest.raises(ModelSetupError, match=r"^forward_fn must return a float tensor") as err:
        BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER, all_layers=all_layers, forward_fn=forward_fn)
    assert err.value.argument == "forward_fn"


def test_a_forward_fn_whose_shape_goes_wrong_later_is_refused_at_that_batch(minilm):
    model, tokenizer = minilm

    def drifting(m, input_ids, attention_mask):
        out = m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return out if input_ids.shape[1] <= 2 else out[:, 1:]

    metric = BERTScore(model=model, tokenizer=tokenizer, num_layers=6, forward_fn=drifting)
    metric.update(["a cat sat"], ["the cat sat"])
    with pytest.raises(ModelSetupError, match=r"it returned a tensor of shape \[\d+, \d+, 384\]"):
        metric.compute()


# -- IDF from a corpus, and from weights ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference_idf_texts(minilm_path, held_out):
    """bert-score 0.3.13's BERTScorer with IDF from the corpus (unpadded: batch_size=1)."""
    from bert_score import BERTScorer

    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        scorer = BERTScorer(
            model_type=minilm_path,
            num_layers=LAYER,
            idf=True,
            idf_sents=held_out["corpus"],
            batch_size=1,
            nthreads=0,
            use_fast_tokenizer=True,
        )
        p, r, f = scorer.score(held_out["cands"], held_out["refs"], batch_size=1)
    return {"precision": p, "recall": r, "f1": f}, scorer._idf_dict


@pytest.mark.slow
def test_idf_texts_equal_the_reference_idf_sents(minilm, minilm_path, held_out, reference_idf_texts):
    expected, _ = reference_idf_texts
    cands, refs = held_out["cands"], held_out["refs"]
    from_disk = run(BERTScore(minilm_path, num_layers=LAYER, idf=True, idf_texts=held_out["corpus"]), cands, refs)
    assert_scores(from_disk, expected, TOL)
    model, tokenizer = minilm
    from_object = BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER, idf=True, idf_texts=held_out["corpus"])
    assert_scores(run(from_object, cands, refs), expected, TOL)
    # the corpus matters: IDF over the references gives other scores
    over_refs = run(BERTScore(minilm_path, num_layers=LAYER, idf=True), cands, refs)
    assert (over_refs["f1"] - expected["f1"]).abs().max() > 1e-4


@pytest.mark.slow
def test_idf_weights_round_trip_through_json(minilm, held_out, tmp_path):
    model, tokenizer = minilm
    cands, refs = held_out["cands"], held_out["refs"]
    first = BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER, idf=True, idf_texts=held_out["corpus"])
    weights = first.idf_weights()
    assert len(weights) == len(tokenizer) and weights[tokenizer.cls_token_id] == 0.0  # in every corpus text
    (tmp_path / "idf.json").write_text(json.dumps(weights))
    loaded = {int(k): v for k, v in json.loads((tmp_path / "idf.json").read_text()).items()}
    again = BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER, idf=True, idf_weights=loaded)
    assert again.idf_weights() == weights
    # the same weights, the same code; IDF over the references (the reference's `_idf`) has another one
    assert "_L5_idf-custom-" in first.hash_code and again.hash_code == first.hash_code
    over_refs = BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER, idf=True)
    assert "_L5_idf_version=" in over_refs.hash_code
    assert_scores(run(again, cands, refs), run(first, cands, refs), 0.0)


@pytest.mark.slow
def test_idf_weights_of_the_references_reproduce_that_metric(minilm, held_out):
    model, tokenizer = minilm
    cands, refs = held_out["cands"][:12], held_out["refs"][:12]
    over_refs = BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER, idf=True)
    expected = run(over_refs, cands, refs)
    weights = over_refs.idf_weights()
    assert weights[tokenizer.cls_token_id] == 0.0  # in all 12 references: ln(13 / 13)
    assert math.isclose(max(weights.values()), math.log(13))  # in none of them
    fixed = BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER, idf=True, idf_weights=weights)
    assert_scores(run(fixed, cands, refs), expected, 0.0)


def test_the_references_idf_dict_of_bert_score_is_taken_as_it_is(minilm_path, held_out, reference_idf_texts):
    """bert-score's idf_dict is a defaultdict: ids it never saw weigh ln(M + 1), its default."""
    expected, idf_dict = reference_idf_texts
    assert isinstance(idf_dict, defaultdict)
    metric = BERTScore(minilm_path, num_layers=LAYER, idf=True, idf_weights=idf_dict)
    assert_scores(run(metric, held_out["cands"], held_out["refs"]), expected, TOL)


def test_a_text_with_a_token_the_weights_lack_is_refused_and_not_kept(minilm, held_out):
    model, tokenizer = minilm
    metric = BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER, idf=True, idf_texts=held_out["corpus"])
    weights = metric.idf_weights()
    missing = tokenizer.convert_tokens_to_ids("zebra")
    del weights[missing]
    partial = BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER, idf=True, idf_weights=weights)
    assert missing not in partial.idf_weights()
    partial.update(["a cat"], ["a dog"])
    with pytest.raises(ArgumentValueError, match=rf"no weight for 1 token id\(s\) of these texts: {missing} 'zebra'"):
        partial.update(["a cat", "a zebra"], ["a dog", "a horse"])
    assert sum(len(x) for x in partial.scored) == 1  # the refused batch left nothing behind


def test_idf_weights_need_idf_and_references_to_count(minilm):
    model, tokenizer = minilm
    with pytest.raises(ArgumentValueError, match="idf=False"):
        BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER).idf_weights()
    with pytest.raises(RuntimeError, match="no reference seen yet"):
        BERTScore(model=model, tokenizer=tokenizer, num_layers=LAYER, idf=True).idf_weights()


# -- IDF from a corpus under DDP: every rank passes the same corpus, and it is counted once ----------------------

WORLD = 2
DDP_TIMEOUT_S = 240


def _ddp_worker(rank: int, port: int, model_dir: str, plan: dict, out_dir: str) -> None:
    from transformers import AutoModel, AutoTokenizer

    with process_group(rank, port, WORLD):
        model, tokenizer = AutoModel.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
        metric = BERTScore(model=model, tokenizer=tokenizer, num_layers=2, idf=True, idf_texts=plan["corpus"])
        mine = plan["shards"][rank]
        metric.update([plan["cands"][i] for i in mine], [plan["refs"][i] for i in mine])
        save_rank(out_dir, rank, {k: v.clone() for k, v in metric.compute().items()})


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:.*truncated to it")  # the tiny model's window is 64 tokens
def test_under_ddp_the_corpus_is_counted_once_not_summed_across_ranks(tiny, held_out):

    n = 10
    plan = {
        "cands": held_out["cands"][:n],
        "refs": held_out["refs"][:n],
        "corpus": held_out["corpus"],
        "shards": [list(range(0, n, 2)), list(range(1, n, 2))],
    }
    ranks = run_ranks(_ddp_worker, str(tiny("bert")), plan, world=WORLD, timeout_s=DDP_TIMEOUT_S)
    order = plan["shards"][0] + plan["shards"][1]  # rank-major
    cands, refs = [plan["cands"][i] for i in order], [plan["refs"][i] for i in order]
    one = BERTScore(tiny("bert"), num_layers=2, idf=True, idf_texts=plan["corpus"])
    expected = run(one, cands, refs)
    for result in ranks:
        assert_scores(result, expected, TOL)
    # had the ranks summed their (equal) corpus counts, the weights would be those of the corpus twice over
    twice = run(BERTScore(tiny("bert"), num_layers=2, idf=True, idf_texts=plan["corpus"] * 2), cands, refs)
    assert (twice["f1"] - expected["f1"]).abs().max() > 1e-4


# -- newer encoders: ModernBERT, EuroBERT, DeBERTa-v3 ----------------------------------------------------------


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """`tiny(family)`: the directory of that family's tiny random model (tests/tiny_models.py), built once."""
    root = tmp_path_factory.mktemp("tiny-user-models")
    return functools.cache(lambda family: build_tiny_model(family, root))


@pytest.fixture(scope="module")
def long_pairs(wmt) -> tuple[list[str], list[str]]:
    """A pair of documents of about 600 tokens each (twelve WMT lines), then three sentence pairs."""
    hyps, refs = wmt["hyps_long"], wmt["refs_long"]
    return [" ".join(hyps[2000:2012]), *hyps[2012:2015]], [" ".join(refs[2000:2012]), *refs[2012:2015]]


def float64_scores(model, tokenizer, cands, refs) -> list[dict[str, torch.Tensor]]:
    """P, R, F per layer, independently: hidden_states[k] of the whole model, one text at a time (no padding),
    greedy matching in float64, CLS and SEP weighing 0."""
    special = {tokenizer.cls_token_id, tokenizer.sep_token_id}

    def states(text):
        ids = torch.tensor([tokenizer(text.strip())["input_ids"]])
        with torch.inference_mode():
            hidden = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True).hidden_states
        weights = torch.tensor([0.0 if t in special else 1.0 for t in ids[0].tolist()], dtype=torch.float64)
        return [h[0].double() / h[0].double().norm(dim=-1, keepdim=True) for h in hidden], weights

    per_layer: list[dict[str, list[float]]] = []
    for cand, ref in zip(cands, refs, strict=True):
        (c_states, c_w), (r_states, r_w) = states(cand), states(ref)
        for k, (c, r) in enumerate(zip(c_states, r_states, strict=True)):
            sim = c @ r.T
            p = float((sim.max(dim=1).values * c_w).sum() / c_w.sum())
            rec = float((sim.max(dim=0).values * r_w).sum() / r_w.sum())
            if len(per_layer) <= k:
                per_layer.append({key: [] for key in KEYS})
            for key, value in zip(KEYS, (p, rec, 2 * p * rec / (p + rec)), strict=True):
                per_layer[k][key].append(value)
    return [{key: torch.tensor(v, dtype=torch.float64) for key, v in layer.items()} for layer in per_layer]


@pytest.mark.slow
@pytest.mark.parametrize("family", list(MODERN))
def test_newer_encoders_layer_k_is_hidden_state_k_on_long_texts(family, tiny, long_pairs):
    from transformers import AutoModel, AutoTokenizer

    path = tiny(family)
    model, tokenizer = AutoModel.from_pretrained(path).train(), AutoTokenizer.from_pretrained(path)
    cands, refs = long_pairs
    assert min(len(tokenizer(t)["input_ids"]) for t in (cands[0], refs[0])) > 512
    independent = float64_scores(AutoModel.from_pretrained(path).eval(), tokenizer, cands, refs)
    depth = MODERN[family].depth
    assert len(independent) == depth + 1

    every = run(BERTScore(model=model, tokenizer=tokenizer, all_layers=True), cands, refs)
    assert every["f1"].shape == (depth + 1, len(cands))
    for k in range(depth + 1):
        one = run(BERTScore(model=model, tokenizer=tokenizer, num_layers=k), cands, refs)
        assert_scores(one, {key: every[key][k] for key in KEYS}, SAME)
        assert_scores(one, independent[k], TOL)
        if k == 1:  # loaded from disk and cut below its depth: the same
            assert_scores(run(BERTScore(path, num_layers=k), cands, refs), one, SAME)


def test_deberta_v3_long_texts_equal_the_reference(tiny, long_pairs, tmp_path):
    """bert-score 0.3.13 crashes under transformers 5 on a tokenizer that knows no maximum length (it asks to
    truncate at 10**30), as DeBERTa-v3's is: here the tokenizer says 2048, past these texts' ~650 tokens."""
    import shutil

    import bert_score
    from transformers import AutoTokenizer

    cands, refs = long_pairs
    path = tmp_path / "tiny-deberta-v3-2048"
    path.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(tiny("deberta-v3") / name, path / name)
    AutoTokenizer.from_pretrained(tiny("deberta-v3"), model_max_length=2048).save_pretrained(path)
    path = str(path)
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        p, r, f = bert_score.score(
            cands, refs, model_type=path, num_layers=2, batch_size=1, nthreads=0, use_fast_tokenizer=True
        )
    assert_scores(run(BERTScore(path, num_layers=2), cands, refs), {"precision": p, "recall": r, "f1": f}, TOL)


@pytest.mark.parametrize(("family", "window"), [("modernbert", 8192), ("eurobert", 8192), ("deberta-v3", None)])
def test_each_newer_encoder_gets_its_own_window(family, window, tiny, long_pairs):
    from transformers import AutoModel, AutoTokenizer

    path = tiny(family)
    text = " ".join([long_pairs[0][0]] * 16)  # about 10000 tokens
    full = len(AutoTokenizer.from_pretrained(path)(text)["input_ids"])
    objects = {"model": AutoModel.from_pretrained(path), "tokenizer": AutoTokenizer.from_pretrained(path)}
    for metric in (BERTScore(path, num_layers=1), BERTScore(**objects, num_layers=1)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ids = metric.token_ids(text)
        if window is None:
            assert len(ids) == full > 8192 and not caught
        else:
            assert len(ids) == window < full and "truncated" in str(caught[0].message)


# -- bad input: a clear error when the metric is built ----------------------------------------------------------


@pytest.fixture
def nothing_loaded(monkeypatch):
    """Loading or setting up a model fails the test: these checks come before."""

    def loaded(*args, **kwargs):
        raise AssertionError("a model was set up before the arguments were checked")

    monkeypatch.setattr(bertscore_tm.models.encoder, "locate_model", loaded)
    monkeypatch.setattr(bertscore_tm.models.encoder, "prepare_user_model", loaded)


def test_argument_mistakes_are_refused_before_any_model_is_set_up(nothing_loaded, minilm, minilm_path):
    model, tokenizer = minilm
    cases = [
        ({"model": model}, ArgumentValueError, "tokenizer", r"model= needs its tokenizer"),
        (
            {"model_name_or_path": minilm_path, "tokenizer": tokenizer},
            ArgumentValueError,
            "tokenizer",
            r"tokenizer= goes with model=",
        ),
        (
            {"model_name_or_path": minilm_path, "model": model, "tokenizer": tokenizer},
            ArgumentValueError,
            "model",
            r"not both",
        ),
        (
            {"model_name_or_path": minilm_path, "forward_fn": lambda m, i, a: i},
            ArgumentValueError,
            "forward_fn",
            r"forward_fn runs a model object",
        ),
        (
            {"model_name_or_path": minilm_path, "idf_texts": ["a text"]},
            ArgumentValueError,
            "idf_texts",
            r"idf_texts is given but idf is False",
        ),
        (
            {"model_name_or_path": minilm_path, "idf_weights": {1: 1.0}},
            ArgumentValueError,
            "idf_weights",
            r"idf_weights is given but idf is False",
        ),
        (
            {"model_name_or_path": minilm_path, "idf": True, "idf_texts": []},
            ArgumentValueError,
            "idf_texts",
            r"idf_texts is empty",
        ),
        (
            {"model_name_or_path": minilm_path, "idf": True, "idf_texts": ["a"], "idf_weights": {1: 1.0}},
            ArgumentValueError,
            "idf_weights",
            r"idf_texts .* or idf_weights .*, not both",
        ),
        ({"model": "bert", "tokenizer": tokenizer}, ArgumentTypeError, "model", r"model must be a torch.nn.Module"),
        ({"model": model, "tokenizer": "bert"}, ArgumentTypeError, "tokenizer", r"tokenizer must be a transformers"),
        (
            {"model": model, "tokenizer": tokenizer, "forward_fn": 3},
            ArgumentTypeError,
            "forward_fn",
            r"forward_fn must be a function",
        ),
        (
            {"model_name_or_path": minilm_path, "idf": True, "idf_texts": b"bytes, not a text"},
            ArgumentTypeError,
            "idf_texts",
            r"idf_texts must be a string or a sequence of strings, got bytes",
        ),
        (
            {"model_name_or_path": minilm_path, "idf": True, "idf_texts": ["a", 3]},
            ArgumentTypeError,
            "idf_texts",
            r"idf_texts\[1\] must be a string",
        ),
        (
            {"model_name_or_path": minilm_path, "idf": True, "idf_weights": {"7": 1.0}},
            ArgumentTypeError,
            "idf_weights",
            r"keys must be token ids \(int\), got str '7' \(JSON gives keys back as strings",
        ),
        (
            {"model_name_or_path": minilm_path, "idf": True, "idf_weights": {7: -1.0}},
            ArgumentValueError,
            "idf_weights",
            r"idf_weights\[7\] must be a finite weight >= 0",
        ),
        (
            {"model_name_or_path": minilm_path, "idf": True, "idf_weights": {7: math.nan}},
            ArgumentValueError,
            "idf_weights",
            r"idf_weights\[7\] must be a finite weight >= 0",
        ),
        (
            {"model_name_or_path": minilm_path, "idf": True, "idf_weights": {}},
            ArgumentValueError,
            "idf_weights",
            r"idf_weights is empty",
        ),
    ]
    for kwargs, error, argument, message in cases:
        with pytest.raises(error, match=message) as err:
            BERTScore(num_layers=LAYER, **kwargs)
        assert err.value.argument == argument, kwargs
    # the functional twins check the same, before loading
    with pytest.raises(ArgumentValueError, match=r"model= needs its tokenizer"):
        bert_score(["a"], ["b"], model=model, num_layers=LAYER)
    with pytest.raises(ArgumentValueError, match=r"idf_texts is given but idf is False"):
        score(["a"], ["b"], model_type=minilm_path, num_layers=LAYER, idf_texts=["a"])


class _Wrapped(nn.Module):
    """A model whose blocks sit where no known layout puts them (inside `inner`), with a config."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.config = inner.config

    def forward(self, input_ids, attention_mask, output_hidden_states=False):
        return self.inner(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=output_hidden_states)


def test_model_mistakes_are_refused_when_the_metric_is_built(minilm, tiny):
    from transformers import AutoModel

    model, tokenizer = minilm
    small = AutoModel.from_pretrained(tiny("bert"))
    with pytest.raises(ModelSetupError, match=r"tokenizer has 30522 token ids but the model's embedding table has"):
        BERTScore(model=small, tokenizer=tokenizer, num_layers=2)
    with pytest.raises(ArgumentValueError, match=r"num_layers is required with model=") as err:
        BERTScore(model=model, tokenizer=tokenizer)
    assert err.value.argument == "num_layers"
    with pytest.raises(ArgumentValueError, match=r"num_layers must be between 0 and 6"):
        BERTScore(model=model, tokenizer=tokenizer, num_layers=7)
    wrapped = _Wrapped(model)
    with pytest.raises(ModelSetupError, match=r"num_layers=3 is below the depth of _Wrapped \(6\).*forward_fn") as err:
        BERTScore(model=wrapped, tokenizer=tokenizer, num_layers=3)
    assert err.value.argument == "num_layers"
    # at its full depth, or with a forward_fn choosing the layer, the same model is fine
    cands, refs = ["a cat sat on the mat"], ["the cat sat"]
    plain = {"model": model, "tokenizer": tokenizer}
    assert_scores(
        run(BERTScore(model=wrapped, tokenizer=tokenizer, num_layers=6), cands, refs),
        run(BERTScore(**plain, num_layers=6), cands, refs),
        SAME,
    )
    third = BERTScore(
        model=wrapped,
        tokenizer=tokenizer,
        num_layers=3,
        forward_fn=lambda m, i, a: m(i, a, output_hidden_states=True).hidden_states[3],
    )
    assert_scores(run(third, cands, refs), run(BERTScore(**plain, num_layers=3), cands, refs), SAME)
