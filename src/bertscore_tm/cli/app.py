"""The parser of every command, and the entry point that runs one and turns what goes wrong into one line
and an exit code. Outputs are checked against inputs here, so that no command can miss it."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

from bertscore_tm.cli import errors
from bertscore_tm.cli.commands import baseline, bert_score, compare, explain, mbr, pairwise, score, show, tune_layers
from bertscore_tm.cli.errors import PROG, UsageError
from bertscore_tm.cli.options import CommandParser
from bertscore_tm.cli.outputs import StandardOutput, check_files, silence_stdout
from bertscore_tm.cli.signals import terminable
from bertscore_tm.errors import BERTScoreError
from bertscore_tm.models.registry import PACKAGED_MINILM

#: The commands, in the order --help lists them: each module declares its parser (`add_parser`) and its `run`.
COMMANDS = (score, compare, show, explain, baseline, pairwise, mbr, tune_layers)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="BERTScore from the command line: exact scores (equal to bert-score 0.3.13), similarity "
        "plots and rescale baselines. Models come from a local directory, the Hugging Face cache or the Hub "
        f"({PACKAGED_MINILM} is packaged). Without a command, the arguments are "
        "bert-score's own (bertscore-tm -r refs.txt -c hyps.txt).",
    )
    from bertscore_tm import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=CommandParser)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0; 2 for a user error; 130 interrupted, 143 terminated).
    Without a command, the arguments are bert-score's (`commands.bert_score`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    as_bert_score = bool(argv) and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")
    args = None if as_bert_score else build_parser().parse_args(argv)
    previous = warnings.showwarning
    warnings.showwarning = errors.show_warning
    out = StandardOutput(sys.stdout)
    try:
        with terminable():
            if args is None:
                code = bert_score.main(argv, out)
            else:
                check_files(args)  # every command's outputs against its inputs, in one place
                code = int(args.run(args, out))
            out.flush()  # a full disk shows here, not when Python exits
        return code
    except errors.Terminated:
        print(f"{PROG}: terminated", file=sys.stderr)
        return errors.TERMINATED
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return errors.INTERRUPTED
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as other tools do
        silence_stdout()
        return 1
    except (UsageError, BERTScoreError) as err:  # the user's to fix: one line; anything else is a bug
        from bertscore_tm.distributed.launch import reports_errors

        if reports_errors():  # under torchrun every process finds the mistake; rank 0 says it once
            print(f"{PROG}: error: {errors.one_line(err)}{errors.hint(err)}", file=sys.stderr)
        return errors.USER_ERROR
    except RuntimeError as err:  # a peer lost under torchrun is not a bug here: one line on each process
        if not errors.lost_process(err):
            raise
        why = errors.one_line(err)
        print(
            f"{PROG}: error: another process of this torchrun job stopped or stopped answering ({why}); nothing was "
            "written. Run the command again; with --checkpoint DIR only the unfinished shards are scored",
            file=sys.stderr,
        )
        return errors.LOST_PROCESS
    finally:
        warnings.showwarning = previous
