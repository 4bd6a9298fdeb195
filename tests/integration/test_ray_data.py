"""BatchScorer and corpus_idf on real Ray clusters (no mocks): a local one (`ray.init(num_cpus=2)`) and one
of two raylets (`ray.cluster_utils.Cluster`), so rows are scored on two nodes; every route equal to the
Metric on the same WMT pairs bit for bit: plain, IDF counted over the Ray Dataset first (two phases), and
several references, in the "numpy", "pandas" and "pyarrow" batch formats. A bad cell comes back from the
worker with its message. An actor killed mid-run is restarted and its lost batch run again, every row scored
once (with Ray Data's defaults and bounded retries); with no restarts the job stops. One Ray start per module
(a module fixture): it takes 5 to 10 s on 2 cores."""

from __future__ import annotations

import os
import signal
import sys

import numpy as np
import pytest

from bertscore_tm import PACKAGED_MINILM, BatchScorer, BERTScore
from bertscore_tm.corpus import corpus_idf

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

N = 64


@pytest.fixture(scope="module")
def rows(wmt):
    cands, refs, others = wmt["hyps_long"][:N], wmt["refs_long"][:N], wmt["refs_long"][N : 2 * N]
    return [
        {"i": i, "candidate": c, "reference": r, "other": o}
        for i, (c, r, o) in enumerate(zip(cands, refs, others, strict=True))
    ]


def metric(rows, several=False, **kwargs):
    m = BERTScore(PACKAGED_MINILM, **kwargs)
    m.update(
        [r["candidate"] for r in rows], [[r["reference"], r["other"]] if several else r["reference"] for r in rows]
    )
    return m, m.compute_scores()


@pytest.fixture(scope="module")
def plain(rows):
    return metric(rows)[1]


@pytest.fixture(scope="module")
def local_ray():
    # ray.init installs a SIGTERM handler of its own and leaves it after shutdown: put the test process's back,
    # so the signal tests that may run later in this worker see the handlers they expect
    sigterm = signal.getsignal(signal.SIGTERM)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
    signal.signal(signal.SIGTERM, sigterm)


def scored(dataset, batch_format="numpy", size=1, **kwargs):
    kwargs = {"model_name_or_path": PACKAGED_MINILM, **kwargs}
    out = dataset.map_batches(
        BatchScorer,
        fn_constructor_kwargs=kwargs,
        compute=ray.data.ActorPoolStrategy(size=size),
        batch_size=16,
        batch_format=batch_format,
    )
    return out.to_pandas().sort_values("i")


def assert_equal(frame, scores, several=False):
    for name in ("precision", "recall", "f1"):
        assert np.array_equal(frame[f"bertscore_{name}"].to_numpy(), getattr(scores, name).numpy()), name
    if several:
        assert np.array_equal(frame["bertscore_best_reference"].to_numpy(), scores.best_reference.numpy())


@pytest.mark.parametrize("batch_format", ["numpy", "pandas", "pyarrow"])
def test_each_batch_format_equals_the_metric(local_ray, rows, plain, batch_format):
    dataset = ray.data.from_items(rows, override_num_blocks=4)
    frame = scored(dataset, batch_format)
    assert list(frame["i"]) == list(range(N)) and list(frame["candidate"]) == [r["candidate"] for r in rows]
    assert_equal(frame, plain)


def test_idf_in_two_phases_and_several_references_equal_the_metric(local_ray, rows):
    dataset = ray.data.from_items([{**r, "refs": [r["reference"], r["other"]]} for r in rows], override_num_blocks=4)
    m, scores = metric(rows, several=True, idf=True)
    weights = corpus_idf(dataset, PACKAGED_MINILM, reference_column="refs")
    assert weights == m.idf_weights()
    assert weights == corpus_idf(dataset, PACKAGED_MINILM, reference_column=["reference", "other"])
    frame = scored(dataset, "pyarrow", reference_column="refs", idf=True, idf_weights=weights)
    assert_equal(frame, scores, several=True)


def test_a_bad_cell_comes_back_with_its_message(local_ray, rows):
    bad = [dict(r) for r in rows[:4]]
    bad[2]["reference"] = None
    with pytest.raises(Exception, match=r"row \d+ of column 'reference' is empty"):
        scored(ray.data.from_items(bad))
    with pytest.raises(Exception, match=r"no column 'target'.*'candidate'"):
        corpus_idf(ray.data.from_items(rows[:4]), PACKAGED_MINILM, reference_column="target")


class NodeScorer(BatchScorer):
    """A BatchScorer that also says which Ray node scored each row."""

    def __call__(self, batch, rank=None):
        out = super().__call__(batch, rank)
        out["node"] = np.array([ray.get_runtime_context().get_node_id()] * len(out["i"]))
        return out


def test_two_raylets_score_on_both_nodes_as_the_metric(local_ray, rows, plain):
    from ray.cluster_utils import Cluster

    ray.shutdown()  # the module's local cluster gives way to one of two nodes, then comes back
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, log_to_driver=False)
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2
        out = ray.data.from_items(rows, override_num_blocks=8).map_batches(
            NodeScorer,
            fn_constructor_kwargs={"model_name_or_path": PACKAGED_MINILM},
            compute=ray.data.ActorPoolStrategy(size=2),
            num_cpus=1,
            batch_size=8,
            batch_format="numpy",
        )
        frame = out.to_pandas().sort_values("i")
        assert frame["node"].nunique() == 2
        assert_equal(frame, plain)
    finally:
        ray.shutdown()
        cluster.shutdown()
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)


class DyingScorer(BatchScorer):
    """A BatchScorer whose process dies (os._exit: no exception, no clean-up, as a killed worker) on its second
    batch, once in the whole job: the first to create the marker file dies, every later process scores."""

    def __init__(self, marker, **kwargs):
        super().__init__(**kwargs)
        self.marker, self.calls = marker, 0

    def __call__(self, batch, rank=None):
        self.calls += 1
        if self.calls == 2:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os._exit(1)
        out = super().__call__(batch, rank)
        out["pid"] = np.full(len(out["i"]), os.getpid())
        return out


def run_dying(rows, marker, **retries):
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        return (
            ray.data.from_items(rows, override_num_blocks=4)
            .map_batches(
                DyingScorer,
                fn_constructor_kwargs={"marker": str(marker), "model_name_or_path": PACKAGED_MINILM},
                compute=ray.data.ActorPoolStrategy(size=1),
                batch_size=16,
                batch_format="numpy",
                **retries,
            )
            .to_pandas()
        )
    finally:
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.mark.parametrize("retries", [{}, {"max_restarts": 1, "max_task_retries": 2}], ids=["defaults", "bounded"])
def test_a_killed_actor_is_restarted_and_every_row_scored_once(local_ray, rows, plain, tmp_path, retries):
    """What docs/dataframes.md says of a worker's death, as a user sees it: the actor's process is killed in
    the middle of the job (after one batch), Ray starts another and runs the lost batch again; the output
    holds every row exactly once, with the Metric's scores. Ray Data's own defaults for an actor pool
    (restarts and task retries without limit) do it, and so do bounded ones."""
    frame = run_dying(rows, tmp_path / "died", **retries)
    assert (tmp_path / "died").exists()  # the actor did die
    assert frame["pid"].nunique() == 2  # its batches were scored by two processes: the dead one and the next
    assert sorted(frame["i"]) == list(range(N))  # every row, none twice
    assert_equal(frame.sort_values("i"), plain)


def test_without_restarts_a_killed_actor_stops_the_job(local_ray, rows, tmp_path):
    with pytest.raises(Exception, match="actor is dead"):
        run_dying(rows, tmp_path / "died", max_restarts=0)
