"""A LightEval custom task file (``lighteval ... --custom-tasks lighteval_task.py``) scored with bertscore-tm's
door: the WMT sample's references (lighteval_data/test.jsonl, from tests/data/wmt), both of them golds of each
doc, BERTScore of the packaged MiniLM rescaled with its packaged baseline."""

from pathlib import Path

from lighteval.metrics.normalizations import remove_braces, remove_braces_and_strip
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc

from bertscore_tm import PACKAGED_MINILM
from bertscore_tm.integrations.lighteval import bertscore_metrics


def wmt_prompt(line: dict, task_name: str) -> Doc:
    references = line["references"]
    return Doc(
        task_name=task_name,
        query=f"Translate line {line['line']}.",
        choices=references,
        gold_index=list(range(len(references))),
    )


TASKS_TABLE = [
    LightevalTaskConfig(
        name="wmt_bertscore",
        prompt_function=wmt_prompt,
        hf_repo=str(Path(__file__).parent / "lighteval_data"),
        hf_subset="default",
        hf_avail_splits=["test"],
        evaluation_splits=["test"],
        generation_size=128,
        metrics=bertscore_metrics(
            PACKAGED_MINILM,
            lang="en",
            rescale_with_baseline=True,
            normalize_gold=remove_braces,
            normalize_pred=remove_braces_and_strip,
        ),
    )
]
