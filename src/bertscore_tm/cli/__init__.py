"""The `bertscore-tm` command line (also `python -m bertscore_tm`).

Subcommands, one module each (its parser and its run):

* ``score``: candidates and references from files, one text per line; corpus means, per-pair scores.
* ``show``: the token-by-token similarity matrix of one pair as a heatmap (PNG, needs matplotlib).
* ``baseline``: a rescale baseline (``LAYER,P,R,F``) from random pairs of a monolingual corpus.
* ``compare``: several systems against the same references: F1 intervals and paired significance tests.
* ``pairwise``: every candidate line against every reference line, an N x M matrix (TSV or JSON).
* ``mbr``: minimum-Bayes-risk selection, the hypothesis of each group that agrees most with the others.
* ``explain``: why a pair scores what it does, token by token (text, JSON or an HTML page).
* ``tune-layers``: which layer's scores agree best with a file of human judgements.

What they share, once each: `inputs` (files, standard input, texts), `outputs` (output files, written atomically,
and standard output), `options` (the option groups several commands take), `metrics` (the metric, built from
checked options), `devices` (device, dtype, torchrun), `model_files` (weights files checked whole), `intervals`
and `errors` (one-line messages, hints, exit codes); `app` builds the parser and runs a command.

User errors (a missing or empty file, files of different lengths, a model or baseline that is not on this
machine, a bad setting, an unusable device, an output that cannot be written, standard output included, any of
the library's `bertscore_tm.errors.BERTScoreError`) print one line, ``bertscore-tm: error: ...``, on stderr and
exit with code 2. Input files, output paths (never one of the inputs, nor two the same), the device, the model's
presence and weights files and the baseline are checked before any model is loaded. A file argument of ``-`` is standard
input (one of them at most). Options that take several files (``-r``, compare's ``-c``) collect every
occurrence (``-r a -r b`` is ``-r a b``); an option that takes one is refused when given twice. Output files
appear whole or not at all. SIGINT and SIGTERM stop a command with one line and exit codes 130 and 143.

``score``, ``compare`` and ``pairwise`` take ``--checkpoint DIR``: a run killed part way and started again scores
only what is missing (`bertscore_tm.corpus.resumable`). ``score``, ``compare``, ``pairwise`` and ``baseline`` also
run on torch's launcher (``torchrun --nproc-per-node N -m bertscore_tm ...``, `bertscore_tm.distributed.launch`):
each process scores a contiguous shard of the lines (``pairwise``: of the candidate rows) and rank 0 writes the
output, the same as one process's. ``show`` and ``mbr`` refuse to run on several processes. ``score`` reads its files
as a stream, in chunks (`bertscore_tm.corpus.files`), so a file of millions of lines is never held as millions of
strings.

Nothing here imports torch until a command runs, so ``--help`` answers at once.
"""

from __future__ import annotations

from bertscore_tm.cli.app import build_parser, main
from bertscore_tm.cli.devices import process_device as _process_device  # noqa: F401 (tests/integration/test_launch.py)
from bertscore_tm.cli.errors import PROG, UsageError
from bertscore_tm.cli.inputs import STDIN, read_lines

__all__ = ["PROG", "STDIN", "UsageError", "build_parser", "main", "read_lines"]
