"""Windows with a head (issue 39): with ``long_texts="window"`` a text too long for the window carries its prompt and
its context (its head) in every window, the text sliding in the room the head leaves; the context is cut from its
start where the head would take more than half the window; masks apply to windowed texts as to any other.

Checked against an independent computation of the rule in plain torch (float64 after the model): the joined string
tokenised with offsets, the head found by characters, each window run by the Hugging Face model, each text token's
vector from the window where it lies farthest from an edge, then greedy matching over the text's own tokens.
"""

from __future__ import annotations

import math
import re
import warnings

import pytest
import torch

from bertscore_tm import BERTScore, bert_score
from bertscore_tm.errors import ArgumentValueError
from bertscore_tm.explanations import explain
from tests.conftest import MINILM

LAYER, MAX_LENGTH = 5, 32  # MiniLM's default layer; a window of 30 tokens besides [CLS] and [SEP]
CANDS = [
    "The committee approved the budget after a long debate on Tuesday, and the members agreed to meet again next "
    "month to discuss the new schools, the roads in the north and the hospital that the town has waited for.",
    "Rain is expected tomorrow.",
]
REFS = [
    "After a lengthy debate on Tuesday the committee passed the budget; its members will meet again next month to "
    "talk about the new schools, the northern roads and the hospital the town has long been waiting for.",
    "Tomorrow it will rain.",
]
CONTEXT = ["Summarise the council meeting for the local paper.", "What is the weather forecast?"]


@pytest.fixture(scope="module")
def hf(minilm_path):
    from transformers import AutoModel, AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path), AutoModel.from_pretrained(minilm_path).eval()


def _windows(n: int, room: int, stride: int) -> list[int]:
    starts = list(range(0, n - room, stride)) if n > room else []
    return [*starts, max(0, n - room)]


def _head_rule(hf, prompt: str, context: str | None, text: str) -> tuple[list[int], list[int], torch.Tensor]:
    """(ids, head flags, float64 unit vectors) of `text` under the rule: [CLS] head text [SEP]."""
    tokenizer, model = hf
    head = prompt + (f"{context.strip()} \n" if context else "")
    enc = tokenizer(head + text.strip(), return_offsets_mapping=True)
    ids, ends = enc["input_ids"], [stop for _, stop in enc["offset_mapping"]]
    part = [
        2 if i in (0, len(ids) - 1) or e > len(head) else (0 if e <= len(prompt) else 1) for i, e in enumerate(ends)
    ]
    size = MAX_LENGTH - 2
    if len(ids) > MAX_LENGTH:  # the context cut from its start until the head is at most half the window
        over = sum(p < 2 for p in part) - size // 2
        drop = {i for i in [k for k, p in enumerate(part) if p == 1][: max(0, over)]}
        ids = [t for k, t in enumerate(ids) if k not in drop]
        part = [p for k, p in enumerate(part) if k not in drop]
    h = sum(p < 2 for p in part)
    body = ids[1 + h : -1]

    def run(seq: list[int]) -> torch.Tensor:
        with torch.inference_mode():
            return model(input_ids=torch.tensor([seq]), output_hidden_states=True).hidden_states[LAYER][0].double()

    if len(ids) <= MAX_LENGTH:
        vectors = run(ids)
    else:
        room = size - h
        stride = max(1, (size // 2) * room // size)
        starts = _windows(len(body), room, stride)
        outs = [run(ids[: 1 + h] + body[a : a + room] + ids[-1:]) for a in starts]
        rows = [outs[0][: 1 + h]]
        for i in range(len(body)):
            dist = [min(i - a, a + room - 1 - i) if a <= i < a + room else -1 for a in starts]
            j = dist.index(max(dist))  # the earlier window on a tie
            rows.append(outs[j][1 + h + i - starts[j]][None])
        rows.append(outs[-1][-1:])
        vectors = torch.cat(rows)
    return ids, [p < 2 for p in part], vectors / vectors.norm(dim=-1, keepdim=True)


def _expected(hf, prompts, contexts, dropped=None) -> torch.Tensor:
    """[pairs, 3] P, R, F: greedy matching over the text's own tokens ([CLS] and [SEP] in, weighing 0), a token
    whose piece `dropped` flags out of the matching too."""
    tokenizer = hf[0]
    out = []
    for k, (cand, ref) in enumerate(zip(CANDS, REFS, strict=True)):
        sides = []
        for text, prompt in ((cand, prompts[0]), (ref, prompts[1])):
            ids, head, vec = _head_rule(hf, prompt, None if contexts is None else contexts[k], text)
            pieces = tokenizer.convert_ids_to_tokens(ids)
            keep = torch.tensor([not h and not (dropped and dropped(p)) for h, p in zip(head, pieces, strict=True)])
            weight = torch.tensor([0.0 if i in (0, len(ids) - 1) else 1.0 for i in range(len(ids))]).double()
            sides.append((vec[keep], weight[keep]))
        (c, wc), (r, wr) = sides
        sim = c @ r.T
        p = float((sim.max(dim=1).values * wc).sum() / wc.sum())
        rec = float((sim.max(dim=0).values * wr).sum() / wr.sum())
        out.append([p, rec, 2 * p * rec / (p + rec)])
    return torch.tensor(out, dtype=torch.float64)


def _rows(result) -> torch.Tensor:
    return torch.stack([result[k].double() for k in ("precision", "recall", "f1")], dim=-1)


def _score(**kwargs):
    return bert_score(CANDS, REFS, MINILM, long_texts="window", max_length=MAX_LENGTH, **kwargs)


@pytest.mark.slow
def test_prompts_and_context_ride_in_every_window(hf):
    prompts = ("query: ", "passage: ")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the heads fit in half the window: nothing is cut, nothing said
        got = _score(context=CONTEXT, candidate_prompt=prompts[0], reference_prompt=prompts[1])
    torch.testing.assert_close(_rows(got), _expected(hf, prompts, CONTEXT), rtol=0, atol=1e-5)
    alone = _rows(_score(candidate_prompt=prompts[0], reference_prompt=prompts[1]))
    torch.testing.assert_close(alone, _expected(hf, prompts, None), rtol=0, atol=1e-5)
    assert (_rows(got)[0] - alone[0]).abs().max() > 1e-4  # the context shaped the windowed texts


@pytest.mark.slow
def test_a_long_context_is_cut_from_its_start_to_half_the_window(hf):
    long_context = [" ".join(["Background of the meeting:"] + CONTEXT * 4), CONTEXT[1]]
    with pytest.warns(UserWarning, match=r"context was cut from its start to leave the text half"):
        got = _score(context=long_context)
    torch.testing.assert_close(_rows(got), _expected(hf, ("", ""), long_context), rtol=0, atol=1e-5)


def test_a_short_pair_with_a_head_runs_whole_as_in_truncate_mode():
    short = dict(context=CONTEXT[1:], candidate_prompt="query: ")
    window = bert_score(CANDS[1:], REFS[1:], MINILM, long_texts="window", max_length=MAX_LENGTH, **short)
    truncate = bert_score(CANDS[1:], REFS[1:], MINILM, max_length=MAX_LENGTH, **short)
    assert torch.equal(window["f1"], truncate["f1"])


def test_masks_apply_to_windowed_texts(hf):
    pattern = r"[^\w#]+"
    got = _score(ignore=pattern)
    expected = _expected(hf, ("", ""), None, dropped=lambda piece: re.fullmatch(pattern, piece) is not None)
    torch.testing.assert_close(_rows(got), expected, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_the_metric_explanations_and_mbr_agree_with_the_function():
    settings = dict(long_texts="window", max_length=MAX_LENGTH, ignore="punctuation", candidate_prompt="query: ")
    metric = BERTScore(MINILM, **settings)
    metric.update(CANDS, REFS, context=CONTEXT)
    got = metric.compute()
    assert torch.equal(got["f1"], bert_score(CANDS, REFS, MINILM, context=CONTEXT, **settings)["f1"])
    why = explain(CANDS[0], [REFS[0]], MINILM, context=CONTEXT[0], **settings)
    assert why.f1 == pytest.approx(float(got["f1"][0]), abs=1e-6)
    assert math.fsum(t.contribution for t in why.candidate_tokens) == pytest.approx(why.raw.precision, abs=1e-6)
    assert {t.role for t in why.candidate_tokens} >= {"prompt", "context", "masked"}
    matrix = BERTScore(MINILM, **settings).pairwise(CANDS, REFS)
    plain = bert_score(CANDS, [REFS[0]] * 2, MINILM, **settings)
    torch.testing.assert_close(matrix["f1"][:, 0], plain["f1"], rtol=0, atol=1e-6)
    _, utilities = BERTScore(MINILM, **settings).mbr_select([CANDS + REFS[:1]], return_utilities=True)
    together = BERTScore(MINILM, **settings).pairwise(CANDS + REFS[:1], CANDS + REFS[:1])["f1"].double()
    expected = [(together[i].sum() - together[i, i]) / 2 for i in range(3)]
    torch.testing.assert_close(utilities[0], torch.stack(expected), rtol=0, atol=1e-6)


def test_a_prompt_longer_than_half_the_window_is_refused():
    prompt = "Represent this sentence for searching relevant passages about the council meeting in the town hall: "
    with pytest.raises(ArgumentValueError, match=r"candidate_prompt takes \d+ tokens; with long_texts='window'"):
        BERTScore(MINILM, long_texts="window", max_length=MAX_LENGTH, candidate_prompt=prompt)
    BERTScore(MINILM, max_length=MAX_LENGTH, candidate_prompt=prompt)  # it leaves a truncated text room


@pytest.mark.slow
def test_a_pair_streamed_through_a_small_table_keeps_its_heads(monkeypatch):
    """A pair of ~450-token texts with a context, streamed through a table of 512 rows (its rows embedded a range
    at a time): the scores of one table holding both texts."""
    cands, refs, context = [" ".join([CANDS[0]] * 10)], [" ".join([REFS[0]] * 10)], CONTEXT[:1]
    settings = dict(long_texts="window", max_length=MAX_LENGTH, candidate_prompt="query: ")
    expected = bert_score(cands, refs, MINILM, context=context, **settings)
    metric = BERTScore(MINILM, **settings)
    metric.update(cands, refs, context=context)
    embedder, tables = metric.embedder, []
    new_table = embedder.new_table
    monkeypatch.setattr(embedder, "new_table", lambda rows: tables.append(rows) or new_table(rows))
    monkeypatch.setattr(type(embedder), "block_bytes", property(lambda self: 1 << 16))
    embedder.max_tokens = 256  # the smallest block is two forward batches: 512 rows
    streamed = metric.compute()
    assert tables == [513]  # 512 rows and the padding row, for two texts of more than 900 rows together
    for key in ("precision", "recall", "f1"):
        torch.testing.assert_close(streamed[key], expected[key], rtol=0, atol=1e-6)


@pytest.mark.slow
def test_a_similarity_matrix_past_the_budget_is_tiled_with_the_same_tokens_out(monkeypatch):
    """A match of ~450 x ~450 tokens whose similarities pass a small budget is matched in tiles: the masked,
    prompt and context tokens stay out there too, so the scores are the untiled ones bit for bit."""
    from bertscore_tm.scoring import matching

    cands, refs, context = [" ".join([CANDS[0]] * 10)], [" ".join([REFS[0]] * 10)], CONTEXT[:1]
    settings = dict(long_texts="window", max_length=MAX_LENGTH, candidate_prompt="query: ", ignore="punctuation")
    whole = bert_score(cands, refs, MINILM, context=context, **settings)
    monkeypatch.setattr(matching, "gather_elements", lambda device: 10_000)
    tiled = bert_score(cands, refs, MINILM, context=context, **settings)
    for key in ("precision", "recall", "f1"):
        assert torch.equal(tiled[key], whole[key]), key
