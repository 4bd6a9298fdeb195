"""Resumable corpus runs: each finished shard's scores are kept in a checkpoint folder, so that a killed run
starts again where it stopped and ends with the scores of an uninterrupted one, bit for bit. A manifest names
what the scores depend on, so a checkpoint of other inputs or another setting is refused, not mixed in.
Docs: docs/corpus-scale.md ("Resumable runs")."""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
from torch import Tensor

from bertscore_tm.distributed.launch import Processes
from bertscore_tm.distributed.ranks import gather, job_place, settings_digest
from bertscore_tm.embedding.embedder import own_precision
from bertscore_tm.engines.paired import PairTokens, match_pairs, weigh_pairs
from bertscore_tm.engines.pairwise import pairwise_scores
from bertscore_tm.errors import ArgumentTypeError, ArgumentValueError, BERTScoreError, warn_user
from bertscore_tm.models.tokenizing import TokenizedPairs
from bertscore_tm.scoring.idf import document_frequency
from bertscore_tm.scoring.results import Scores, scores_of
from bertscore_tm.scoring.scorer import Scorer
from bertscore_tm.settings import rules
from bertscore_tm.settings.arguments import ROW_SHARD_SIZE, SHARD_SIZE
from bertscore_tm.settings.texts import check_contexts, check_pairs, check_stream, check_text, check_texts

#: The manifest's format; a checkpoint of another format is refused.
FORMAT = 1

#: The name of the thread a run tokenises its next shard on (`prepared_ahead`).
TOKENISING_THREAD = "bertscore-tm-tokenise"

Item = TypeVar("Item")
Prepared = TypeVar("Prepared")
_END = object()


def prepared_ahead(
    items: Iterable[Item], prepare: Callable[[Item], Prepared]
) -> Generator[tuple[Item, Prepared], None, None]:
    """Each item with `prepare(item)`, the next one prepared on a thread of this call's own while the caller works:
    the tokenizer and the device do not wait for each other. An error of `prepare` is raised at its item's turn.

    >>> [(n, twice) for n, twice in prepared_ahead([1, 2, 3], lambda n: 2 * n)]
    [(1, 2), (2, 4), (3, 6)]
    """
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=TOKENISING_THREAD)
    try:
        queue = iter(items)
        item: Any = next(queue, _END)
        future: Future[Prepared] | None = None if item is _END else pool.submit(prepare, item)
        while future is not None:
            result, current = future.result(), item
            item = next(queue, _END)
            future = None if item is _END else pool.submit(prepare, item)
            yield current, result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class CheckpointMismatchError(BERTScoreError, ValueError):
    """A checkpoint made from other inputs, another setting or another number of processes. `what` names what
    differs (``"setting"``, ``"texts"``, ``"world_size"``...), `saved` and `given` the two values."""

    def __init__(self, message: str, *, what: str, saved: object, given: object) -> None:
        super().__init__(message, argument="checkpoint_dir")
        self.what, self.saved, self.given = what, saved, given


class CheckpointWriteError(BERTScoreError, OSError):
    """A checkpoint folder that cannot be written: the shards written before are kept, so a run again goes on."""

    def __init__(self, message: str) -> None:
        super().__init__(message, argument="checkpoint_dir")


@contextlib.contextmanager
def _writing(what: Path) -> Iterator[None]:
    try:
        yield
    except OSError as err:
        raise CheckpointWriteError(
            f"cannot write the checkpoint's {what}: {err.strerror or err}. The shards written before are kept: "
            "free space or fix the folder, then run again to go on from them."
        ) from err


def write_atomically(target: Path, data: bytes) -> None:
    """Write `target` so that a kill leaves the old file or the new one, never part of one."""
    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, target)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
    if hasattr(os, "O_DIRECTORY"):  # POSIX: make the rename durable
        folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def texts_digest(items: Sequence[str | Sequence[str]]) -> str:
    """sha256 of texts (or groups of texts), length-prefixed so that no two different inputs give the same bytes.

    >>> texts_digest(["ab", "c"]) == texts_digest(["a", "bc"])
    False
    """
    digest = hashlib.sha256()
    for item in items:
        group = [item] if isinstance(item, str) else list(item)
        digest.update(len(group).to_bytes(4, "little"))
        for text in group:
            data = text.encode("utf-8", "surrogatepass")
            digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def shard_ranges(start: int, stop: int, size: int) -> list[tuple[int, int]]:
    """Consecutive ranges of at most `size` items from `start` to `stop`.

    >>> shard_ranges(2, 9, 3)
    [(2, 5), (5, 8), (8, 9)]
    """
    return [(lo, min(lo + size, stop)) for lo in range(start, stop, size)]


@dataclass(frozen=True)
class Checkpoint:
    """One process's part of a checkpoint folder. `record` is what the scores depend on: a folder whose manifest
    holds another record is refused, naming the first difference."""

    folder: Path
    rank: int
    record: dict[str, Any]
    #: sha256 of each shard file written (by file name), kept in the manifest beside the record.
    digests: dict[str, str]

    @classmethod
    def open(
        cls, folder: str | os.PathLike[str], scorer: Scorer, kind: str, row_shape: list[int], **fields: Any
    ) -> Checkpoint:
        """This process's checkpoint in `folder` (made if missing), checked against the record of what every run's
        scores depend on: the setting, the job, the scores' float32 rows of `row_shape`, and the run's `fields`."""
        path = Path(folder).expanduser()
        with _writing(path):
            path.mkdir(parents=True, exist_ok=True)
        rank, world = job_place()
        fixed = scorer.fixed_idf  # fixed IDF weights change the scores, not the hash code: the digest holds them
        fixed_digest = None if fixed is None else hashlib.sha256(fixed.double().cpu().numpy().tobytes()).hexdigest()
        setting = str(settings_digest({**scorer.settings_record(), "fixed_idf": fixed_digest}))
        record = {"format": FORMAT, "kind": kind, "hash_code": scorer.hash_code, "setting": setting}
        record |= {"rank": rank, "world_size": world, "dtype": "float32", "row_shape": row_shape, **fields}
        this = cls(path, rank, record, {})
        this._check_world_size()
        saved = _read_manifest(this.manifest)
        if saved is None:
            this._write_manifest()
        else:
            _compare(path, saved, record)
            digests = saved.get("digests")
            this.digests.update(digests if isinstance(digests, dict) else {})
        return this

    @property
    def manifest(self) -> Path:
        return self.folder / f"manifest-rank{self.rank}.json"

    def _write_manifest(self) -> None:
        text = json.dumps({**self.record, "digests": self.digests}, indent=1, sort_keys=True).encode("utf-8")
        with _writing(self.manifest):
            write_atomically(self.manifest, text)

    def _check_world_size(self) -> None:
        world = self.record["world_size"]
        for manifest in sorted(self.folder.glob("manifest-rank*.json")):
            saved = _read_manifest(manifest)
            if saved is not None and saved.get("world_size") != world:
                raise CheckpointMismatchError(
                    f"checkpoint {self.folder} was made by {saved.get('world_size')} process(es), this run has "
                    f"{world}: each process keeps the shards of its own part of the inputs, so resume with the "
                    "same number of processes (torchrun --nproc-per-node), or start in a new folder.",
                    what="world_size",
                    saved=saved.get("world_size"),
                    given=world,
                )

    def shard_path(self, k: int, digest: str | None = None) -> Path:
        """Shard `k`'s file, a stream's named by its texts' `digest` too: its manifest cannot list texts unread."""
        named = "" if digest is None else f"-{digest[:16]}"
        return self.folder / f"rank{self.rank}-shard{k:06d}{named}.npy"

    def stream_saved(self, k: int, digest: str) -> bool:
        """Whether shard `k` of a stream has a file; one made from other texts is refused."""
        found = sorted(self.folder.glob(f"rank{self.rank}-shard{k:06d}-*.npy"))
        path = self.shard_path(k, digest)
        if found and path not in found:
            rows = self.record["shard_size"]
            raise CheckpointMismatchError(
                f"checkpoint {self.folder} was made from other inputs: shard {k} (pairs {k * rows} on, of process "
                f"{self.rank}) holds other texts or contexts. Pass the same pairs (and contexts) in the same order "
                "to resume, or start in a new folder.",
                what="texts",
                saved=found[0].stem.rsplit("-", 1)[-1],
                given=digest[:16],
            )
        return path.exists()

    def load(self, k: int, rows: int, digest: str | None = None) -> Tensor | None:
        """Shard `k`'s saved scores (a stream's: of the texts of `digest`), or None where it is missing, torn or not
        the file written (then warned about)."""
        path = self.shard_path(k, digest)
        if not (path.exists() if digest is None else self.stream_saved(k, digest)):
            return None
        shape = (rows, *self.record["row_shape"])
        try:
            data = path.read_bytes()
            array = np.load(io.BytesIO(data), allow_pickle=False)
        except (OSError, ValueError, EOFError):
            data, array = b"", None
        if array is None or array.shape != shape or str(array.dtype) != self.record["dtype"]:
            warn_user(f"checkpoint shard {path} is incomplete or damaged: scoring its inputs again")
            return None
        if hashlib.sha256(data).hexdigest() != self.digests.get(path.name):
            warn_user(
                f"checkpoint shard {path} is not the file this run wrote (its bytes do not match the digest in the "
                "manifest: replaced, copied from another run or edited): scoring its inputs again"
            )
            return None
        return torch.from_numpy(array)

    def save(self, k: int, scores: Tensor, digest: str | None = None) -> None:
        """Keep shard `k`'s scores atomically, the digest in the manifest first: a kill between the two leaves a digest
        without its file (scored again), never a file without its digest."""
        buffer = io.BytesIO()
        np.save(buffer, scores.detach().cpu().contiguous().numpy(), allow_pickle=False)
        data = buffer.getvalue()
        target = self.shard_path(k, digest)
        self.digests[target.name] = hashlib.sha256(data).hexdigest()
        self._write_manifest()
        with _writing(target):
            write_atomically(target, data)

    def run(
        self,
        ranges: list[tuple[int, int]],
        device: torch.device,
        score: Callable[[int, int, Any], Tensor],
        prepare: Callable[[int, int], Any] | None = None,
    ) -> Tensor:
        """Every shard's scores in order: the saved read back, the rest scored (`prepare` a shard ahead) and saved;
        under torchrun, every process's shards, gathered in rank order."""
        pieces = [self.load(k, hi - lo) for k, (lo, hi) in enumerate(ranges)]
        missing = [k for k, piece in enumerate(pieces) if piece is None]
        if prepare is None:
            made: Generator[tuple[int, Any], None, None] = ((k, None) for k in missing)
        else:
            made = prepared_ahead(missing, lambda k: prepare(*ranges[k]))
        with contextlib.closing(made):
            for k, prepared in made:
                lo, hi = ranges[k]
                done = score(lo, hi, prepared).cpu()
                self.save(k, done)
                pieces[k] = done
        if pieces:
            per = torch.cat([piece for piece in pieces if piece is not None])
        else:
            per = torch.zeros((0, *self.record["row_shape"]), dtype=getattr(torch, self.record["dtype"]))
        if self.record["world_size"] > 1:
            per = torch.cat([x.cpu() for x in gather(per.to(device), None)])
        return per


def _read_manifest(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        loaded = None
    if not isinstance(loaded, dict):
        raise CheckpointMismatchError(
            f"checkpoint manifest {path} is unreadable: it is not one this package wrote; start in a new folder.",
            what="manifest",
            saved=None,
            given=None,
        )
    return loaded


#: The manifest's fields in the order they are compared, with what a difference in each means.
_MEANINGS = {
    "format": "the checkpoint format (written by another version of bertscore-tm)",
    "kind": "the kind of run (pairs, a stream of pairs or an all-pairs matrix)",
    "world_size": "the number of processes",
    "hash_code": "the setting (model, layer, IDF, rescaling, ...)",
    "setting": "the setting (a value that changes scores but not the hash code)",
    "dtype": "the scores' type",
    "row_shape": "the scores' shape (all_layers)",
    "shard_size": "the shard size",
    "items": "the number of inputs",
    "context": "the contexts (context=, score --context: one text per pair, encoded with it)",
    "references": "the references (all of them, which every score here depends on)",
    "idf_counts": "the IDF counts over all the references",
    "range": "this process's part of the inputs",
}


def _compare(folder: Path, saved: dict[str, Any], given: dict[str, Any]) -> None:
    for key in [*_MEANINGS, "shards"]:
        if saved.get(key) == given.get(key):
            continue
        if key == "shards":
            what, saved_value, given_value = _shard_difference(saved.get(key) or [], given[key], given, "texts")
        elif key == "context" and saved.get(key) is not None and given.get(key) is not None:
            what, saved_value, given_value = _shard_difference(saved[key], given[key], given, "contexts")
        elif key == "context":  # one run with contexts, the other without: no digest to show
            what = _MEANINGS[key]
            saved_value, given_value = ("none" if v is None else "one per pair" for v in (saved.get(key), given[key]))
        else:
            what, saved_value, given_value = _MEANINGS[key], saved.get(key), given.get(key)
        raise CheckpointMismatchError(
            f"checkpoint {folder} was made from other inputs or another setting, {what}: {saved_value!r} there, "
            f"{given_value!r} here. Run with the same inputs and settings to resume, or start in a new folder.",
            what="texts" if key == "shards" else key,
            saved=saved_value,
            given=given_value,
        )


def _shard_difference(old: list[str], new: list[str], given: dict[str, Any], label: str) -> tuple[str, Any, Any]:
    k = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
    lo = given["range"][0] + k * given["shard_size"]
    hi = min(lo + given["shard_size"], given["range"][1]) - 1
    what = f"the {label} of inputs {lo} to {hi} (shard {k} of process {given['rank']})"
    return what, (old[k] if k < len(old) else None), (new[k] if k < len(new) else None)


def _run_of(
    metric_or_scorer: Any, checkpoint_dir: object, shard_size: object
) -> tuple[Scorer, torch.device, int, bool]:
    """The scoring core and device of a `BERTScore` (or a `Scorer`), the checked shard size, and the metric's
    progress bar."""
    rules.path()("checkpoint_dir", checkpoint_dir)
    rules.integer(1)("shard_size", shard_size)
    size, verbose = int(shard_size), bool(getattr(metric_or_scorer, "verbose", False))  # type: ignore[call-overload]
    if isinstance(metric_or_scorer, Scorer):
        return metric_or_scorer, torch.device(metric_or_scorer.embedder.device), size, verbose
    scorer = getattr(metric_or_scorer, "scorer", None)
    if not isinstance(scorer, Scorer):  # a model name is not a metric: the metric holds the whole setting
        raise ArgumentTypeError(
            f"metric must be a BERTScore metric (e.g. BERTScore(model_name_or_path)), got "
            f"{type(metric_or_scorer).__name__} {metric_or_scorer!r:.60}",
            argument="metric",
            expected="BERTScore",
            value=metric_or_scorer,
        )
    return scorer, torch.device(metric_or_scorer.device), size, verbose


def score_resumable(
    metric: Any,
    cands: Sequence[str],
    refs: Sequence[str] | Sequence[Sequence[str]],
    checkpoint_dir: str | os.PathLike[str],
    shard_size: int = SHARD_SIZE,
    context: str | Sequence[str] | None = None,
) -> Scores:
    """Per-pair scores with `metric`'s setting, keeping each finished shard in `checkpoint_dir`, so that a run
    again after a kill scores only what is missing. Equal bit for bit to ``metric.update(...)`` then
    ``compute_scores()`` (IDF over all `refs`); `context` is part of the checkpoint's identity. Under torchrun
    every process passes all the pairs and gets every pair's scores back.

    >>> import tempfile
    >>> from bertscore_tm import PACKAGED_MINILM, BERTScore
    >>> scores = score_resumable(BERTScore(PACKAGED_MINILM), ["The cat sat on the mat."],
    ...                          ["A cat was sitting on the mat."], tempfile.mkdtemp())
    >>> round(float(scores.f1[0]), 4)
    0.9183
    """
    scorer, device, shard_size, verbose = _run_of(metric, checkpoint_dir, shard_size)
    cand_list, groups = check_pairs(cands, refs, ("cands", "refs"), empty=False)
    contexts = check_contexts(context, len(cand_list))
    with own_precision(device):
        scorer.follow(device)
        weights, idf_counts = _corpus_weights(scorer, groups, contexts, device)
    part, ranges = _own_shards(len(cand_list), shard_size)
    checkpoint = Checkpoint.open(
        checkpoint_dir,
        scorer,
        "pairs",
        _pair_rows(scorer),
        **part,
        idf_counts=idf_counts,
        context=None if contexts is None else [texts_digest(contexts[lo:hi]) for lo, hi in ranges],
        shards=[texts_digest([*cand_list[lo:hi], *groups[lo:hi]]) for lo, hi in ranges],
    )

    def tokenise(lo: int, hi: int) -> TokenizedPairs:
        return scorer.pairs.pairs(cand_list[lo:hi], groups[lo:hi], _part(contexts, lo, hi))

    def score(lo: int, hi: int, tokens: TokenizedPairs) -> Tensor:
        return _score_tokens(scorer, tokens, device, verbose, weights)

    per = checkpoint.run(ranges, device, score, tokenise)
    return scores_of(per, scorer.all_layers, scorer.code_with(contexts))


#: One item of a stream: ``(candidate, reference or references)``, or with the pair's context third.
StreamItem = tuple[str, str | Sequence[str]] | tuple[str, str | Sequence[str], str]


def score_stream(
    metric: Any,
    pairs: Iterable[StreamItem],
    checkpoint_dir: str | os.PathLike[str],
    shard_size: int = SHARD_SIZE,
) -> Iterator[Scores]:
    """Scores of an iterable of ``(candidate, reference(s)[, context])`` a shard at a time, kept in
    `checkpoint_dir`: memory holds one shard however long the stream, and a loop run again reads finished shards
    back. IDF over the references is refused, since they are not all read yet: pass ``idf_texts`` or ``idf_weights``.
    Under torchrun each process passes its own pairs; nothing is gathered.

    >>> import tempfile
    >>> from bertscore_tm import PACKAGED_MINILM, BERTScore
    >>> pairs = [("The cat sat on the mat.", "A cat was sitting on the mat."), ("Hi.", ["Hello.", "Hi there."])]
    >>> [round(float(s.f1[0]), 4) for s in score_stream(BERTScore(PACKAGED_MINILM), pairs, tempfile.mkdtemp(), 1)]
    [0.9183, 0.8819]
    """
    scorer, device, shard_size, verbose = _run_of(metric, checkpoint_dir, shard_size)
    stream = check_stream(pairs, "pairs")
    if scorer.counts_idf:
        raise ArgumentValueError(
            "score_stream cannot count IDF over references it has not read yet: give the metric idf_texts or "
            "idf_weights, or score a list of pairs with score_resumable",
            argument="idf",
            allowed="idf=False, or idf_texts / idf_weights",
            value=True,
        )
    with own_precision(device):
        scorer.follow(device)
        weights = scorer.weights(device=device)
    checkpoint = Checkpoint.open(checkpoint_dir, scorer, "stream", _pair_rows(scorer), shard_size=shard_size)

    def prepare(numbered: tuple[int, list[Any] | Exception]) -> _StreamShard:
        k, chunk = numbered
        if isinstance(chunk, Exception):  # the iterable's own error, raised at the turn of the shard it cut short
            raise chunk
        cands, groups, contexts = _stream_items(chunk, k * shard_size)
        # the texts' digest, and with contexts the digest of those too (as `score_resumable` keys its shards)
        digest = texts_digest([*cands, *groups, *([] if contexts is None else [texts_digest(contexts)])])
        saved = checkpoint.stream_saved(k, digest)  # a finished shard is not tokenised
        return _StreamShard(
            cands, groups, contexts, digest, None if saved else scorer.pairs.pairs(cands, groups, contexts)
        )

    shards = prepared_ahead(enumerate(_chunks(stream, shard_size)), prepare)
    with contextlib.closing(shards):
        for (k, _), shard in shards:
            per = None if shard.tokens is not None else checkpoint.load(k, len(shard.cands), shard.digest)
            if per is None:
                tokens = shard.tokens
                if tokens is None:  # a finished shard's file was damaged: scored again
                    tokens = scorer.pairs.pairs(shard.cands, shard.groups, shard.contexts)
                per = _score_tokens(scorer, tokens, device, verbose, weights).cpu()
                checkpoint.save(k, per, shard.digest)
            yield scores_of(per, scorer.all_layers, scorer.code_with(shard.contexts))


@dataclass(frozen=True)
class _StreamShard:
    """A stream's shard as the tokenising thread made it (no tokens where it was finished before)."""

    cands: list[str]
    groups: list[list[str]]
    contexts: list[str] | None
    digest: str
    tokens: TokenizedPairs | None


def _chunks(stream: Iterator[Any], size: int) -> Iterator[list[Any] | Exception]:
    """`stream`'s items `size` at a time; the stream's own error last, raised at that shard's turn."""
    while True:
        try:
            chunk = list(itertools.islice(stream, size))
        except Exception as err:
            yield err
            return
        if not chunk:
            return
        yield chunk


def _score_tokens(
    scorer: Scorer, tokens: TokenizedPairs, device: torch.device, verbose: bool, weights: Tensor
) -> Tensor:
    """A shard's P, R, F and best reference from its tokens, its tokenisation's warnings said at its turn."""
    for note in tokens.notes:
        warn_user(note)
    scorer.check_known_weights(
        torch.cat([tokens.cand_ids, tokens.ref_ids]), torch.cat([tokens.cand_marked, tokens.ref_marked])
    )
    pairs = PairTokens.of(tokens)
    with own_precision(device):
        scorer.follow(device)
        matches = match_pairs(scorer, pairs, torch.ones(len(pairs), dtype=torch.bool), verbose)
        return weigh_pairs(scorer, pairs.to(device), matches, weights)


def _stream_items(chunk: list[Any], first: int) -> tuple[list[str], list[list[str]], list[str] | None]:
    """A stream's chunk as candidates, reference groups and contexts (None where every item is a pair), each item
    checked in turn."""
    cands, groups, contexts = [], [], []
    for i, item in enumerate(chunk, first):
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise ArgumentValueError(
                f"pairs[{i}] must be (candidate, reference(s)) or (candidate, reference(s), context), got {item!r:.80}",
                argument="pairs",
                allowed="2- or 3-item tuples",
                value=item,
            )
        cands.append(check_text(item[0], f"pairs[{i}][0]"))
        groups.append(check_texts(item[1], f"pairs[{i}][1]", what="reference", empty=False))
        contexts.append(check_text(item[2], f"pairs[{i}][2]") if len(item) == 3 else "")
    return cands, groups, None if all(len(item) == 2 for item in chunk) else contexts


def _own_shards(items: int, shard_size: int) -> tuple[dict[str, Any], list[tuple[int, int]]]:
    """This process's part of `items` inputs as its manifest records it, and that part's shards."""
    start, stop = Processes(*job_place()).shard(items)
    return {"range": [start, stop], "items": items, "shard_size": shard_size}, shard_ranges(start, stop, shard_size)


def _pair_rows(scorer: Scorer) -> list[int]:
    """A pair's scores: P, R, F (and F-beta) and the best reference, for each layer scored."""
    return [scorer.embedder.num_rows, 4 + (scorer.beta is not None)]


def _part(contexts: list[str] | None, lo: int, hi: int) -> list[str] | None:
    return None if contexts is None else contexts[lo:hi]


def _corpus_weights(
    scorer: Scorer, groups: list[list[str]], contexts: list[str] | None, device: torch.device
) -> tuple[Tensor, str | None]:
    """Token weights for every shard: IDF, where counted, over all the references in a tokenisation pass first,
    each encoded as the metric encodes it, since every shard's weights depend on every reference."""
    if not scorer.counts_idf:
        return scorer.weights(device=device), None
    doc_freq = torch.zeros(scorer.vocab_size, dtype=torch.long)
    num_refs = 0
    with warnings.catch_warnings():  # long or blank references are warned about when their shard is scored
        warnings.simplefilter("ignore")
        for lo, hi in shard_ranges(0, len(groups), 4096):
            counts = [len(group) for group in groups[lo:hi]]
            refs = [r for group in groups[lo:hi] for r in group]
            _, (ids, lens, marked) = scorer.encode_pairs([""] * (hi - lo), refs, _part(contexts, lo, hi), counts)
            doc_freq += document_frequency(ids, lens, scorer.vocab_size, marked=marked).cpu()
            num_refs += len(refs)
    digest = hashlib.sha256(doc_freq.numpy().tobytes() + num_refs.to_bytes(8, "little")).hexdigest()
    return scorer.weights(doc_freq.to(device), num_refs, device), digest


def pairwise_resumable(
    metric: Any,
    cands: Sequence[str],
    refs: Sequence[str],
    checkpoint_dir: str | os.PathLike[str],
    shard_size: int = ROW_SHARD_SIZE,
) -> Tensor:
    """Every candidate against every reference as ``metric.pairwise`` scores them (P, R, F stacked: [3, N, M]),
    keeping each finished shard of rows in `checkpoint_dir`, so that a run again after a kill scores only the
    missing rows. Under torchrun each process scores its rows and every process gets the whole matrices."""
    scorer, device, shard_size, verbose = _run_of(metric, checkpoint_dir, shard_size)
    cand_list = check_texts(cands, "cands", what="candidate", empty=False)
    ref_list = check_texts(refs, "refs", what="reference", empty=False)
    scores = 3 if scorer.beta is None else 4  # P, R, F (and F-beta)
    rows = [scores, scorer.embedder.num_rows, len(ref_list)] if scorer.all_layers else [scores, len(ref_list)]
    part, ranges = _own_shards(len(cand_list), shard_size)
    checkpoint = Checkpoint.open(
        checkpoint_dir,
        scorer,
        "pairwise",
        rows,
        **part,
        references=texts_digest(ref_list),
        shards=[texts_digest(cand_list[lo:hi]) for lo, hi in ranges],
    )

    def score(lo: int, hi: int, _: None) -> Tensor:
        block = pairwise_scores(scorer, cand_list[lo:hi], ref_list, device, verbose=verbose)
        return block.float().movedim(-2, 0).contiguous()  # [rows of the shard, 3, (L + 1,) M]

    return checkpoint.run(ranges, device, score).movedim(0, -2)
