"""The metric a command scores with, built from its options once each is checked: model present with whole
weights files, a layer known or given, the baseline readable, the device usable, all before the model loads."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bertscore_tm.cli import devices, model_files, options
from bertscore_tm.cli.errors import UsageError, one_line
from bertscore_tm.errors import BERTScoreError


def make_metric(**kwargs: Any) -> Any:
    """A BERTScore metric of these settings; a bad setting or unreadable weights is a user error."""
    from bertscore_tm.metric.bertscore import BERTScore
    from bertscore_tm.settings.config import Config

    config = Config.of(kwargs)
    try:
        return BERTScore.from_config(config)
    except BERTScoreError:
        raise  # reported with a hint from its fields
    except (ValueError, TypeError, OSError) as err:
        raise UsageError(f"cannot set up {kwargs.get('model_name_or_path')}: {one_line(err)}") from None
    except model_files.weights_read_errors() as err:
        source = {k: kwargs[k] for k in ("revision", "local_files_only", "trust_remote_code")}
        folder = model_folder(str(kwargs["model_name_or_path"]), **source)
        files = ", ".join(str(f) for f in model_files.weights_files(folder))
        raise UsageError(
            f"cannot read the weights of the model in {folder} ({files}): {one_line(err)}; the files are damaged: "
            "download the model again"
        ) from None


def scoring_metric(args: argparse.Namespace) -> Any:
    """The metric of the command's options, each checked before the model loads: a model without a tuned
    default layer needs -l, and with rescaling the baseline must be there and readable."""
    from bertscore_tm.models.registry import is_known_model
    from bertscore_tm.scoring.baselines import find_baseline, read_baseline

    name, model_options = checked_model(args)
    if args.num_layers is None and not is_known_model(name):
        raise UsageError(
            f"no default layer is known for {name}: pass -l N (0 = the embeddings, up to the model's depth), "
            "or add the model to a layer table, the JSON file BERTSCORE_TM_LAYERS names (bertscore-tm tune-layers "
            "--add-to-table finds its best layer and writes it there; configs/models.json lists the built-in layers)"
        )
    if args.rescale_with_baseline:  # a missing or malformed file is said before the model loads
        read_baseline(find_baseline(args.lang, name, args.baseline_path))
    return command_metric(
        args,
        name,
        model_options,
        num_layers=args.num_layers,
        idf=args.idf,
        rescale_with_baseline=args.rescale_with_baseline,
        baseline_path=args.baseline_path,
        device=devices.process_device(args.device),
        beta=getattr(args, "beta", None),  # show has none of these four
        ignore=getattr(args, "ignore", None),
        candidate_prompt=getattr(args, "candidate_prompt", None),
        reference_prompt=getattr(args, "reference_prompt", None),
    )


def command_metric(args: argparse.Namespace, name: str, model_options: dict[str, Any], **settings: Any) -> Any:
    """A metric of model `name` with these settings and the command's run options (-b, --dtype, --compile,
    --progress: every command but show has them)."""
    run: dict[str, Any] = {}
    if hasattr(args, "batch_size"):
        import torch

        run = {
            "batch_size": args.batch_size,
            "model_dtype": getattr(torch, args.dtype),
            "compile_model": args.compile,
            "verbose": options.progress(args),
        }
    return make_metric(model_name_or_path=name, lang=args.lang, **model_options, **(run | settings))


def checked_model(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The model asked for (or the language's default), found, with weights files that are whole; and the
    metric's arguments for where it comes from and for long texts, checked."""
    from bertscore_tm.models.registry import default_model

    if args.window_stride is not None and args.long_texts != "window":
        raise UsageError(f"--window-stride {args.window_stride} needs --long-texts window")
    source = {"revision": args.revision, "local_files_only": args.offline, "trust_remote_code": args.trust_remote_code}
    name = args.model if args.model is not None else default_model(args.lang)
    model_files.check_weights(model_folder(name, **source))  # ModelNotFoundError first, before any other complaint
    long_texts = {"long_texts": args.long_texts, "window_stride": args.window_stride}
    return str(name), {**source, **long_texts, "prefix_space": not args.no_prefix_space}


def model_folder(name: str, **source: Any) -> Path:
    from bertscore_tm.models.loading import locate_model

    return locate_model(name, **source).path
