"""A stand-in for the Hugging Face Hub on 127.0.0.1, and the client process that downloads from it.

`HubServer` (an `http.server` in a thread) serves model repos, each a set of commits of files, through the
endpoints huggingface_hub uses to download: a model's info (``GET /api/models/{repo}/revision/{rev}``: its
commit and file list) and a file (``HEAD`` and ``GET /{repo}/resolve/{rev}/{file}``, with the ``X-Repo-Commit``,
``ETag`` and ``Content-Length`` headers it reads; ``X-Error-Code`` on a 404). It records every request, and
serves a file wrong on demand (`fault`): a 500, a body shorter than announced, a connection dropped mid-file.

The downloads run in another process (`run_client`): huggingface_hub reads its settings (``HF_ENDPOINT``, the
cache, offline mode) when imported, and the tests' own process is offline (conftest.py). The client runs this
file as a script, performing the steps it is given and printing one JSON result per step.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

REPO = Path(__file__).resolve().parents[1]
# a repo is `org/name` or, as the Hub's oldest models (`roberta-large`), a bare `name`
_INFO = re.compile(r"^/api/models/(?P<repo>[^/]+(?:/[^/]+)??)(?:/revision/(?P<rev>[^/]+))?$")
_FILE = re.compile(r"^/(?P<repo>[^/]+(?:/[^/]+)??)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
FAULTS = ("500", "truncate", "drop")


class HubServer:
    """Model repos served over HTTP on a free port of 127.0.0.1; a context manager that starts and stops it."""

    def __init__(self) -> None:
        self.commits: dict[str, dict[str, dict[str, bytes]]] = {}  # repo -> commit -> file -> content
        self.refs: dict[str, dict[str, str]] = {}  # repo -> branch or tag -> commit
        self.faults: dict[tuple[str, str], str] = {}  # (commit, file) -> one of FAULTS
        self.requests: list[tuple[str, str]] = []  # (method, path), in order
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def publish(self, repo: str, folder: Path, *, ref: str = "main", extra: dict[str, bytes] | None = None) -> str:
        """A new commit of `repo` with the files at the top of `folder` (and `extra`), which `ref` then names;
        returns its hash."""
        files = {path.name: path.read_bytes() for path in sorted(Path(folder).iterdir()) if path.is_file()}
        files.update(extra or {})
        digest = hashlib.sha1(repo.encode())
        for name, content in sorted(files.items()):
            digest.update(name.encode() + hashlib.sha256(content).digest())
        commit = digest.hexdigest()
        self.commits.setdefault(repo, {})[commit] = files
        self.refs.setdefault(repo, {})[ref] = commit
        return commit

    def fault(self, commit: str, filename: str, kind: str) -> None:
        """Serve `filename` of `commit` wrong from now on (its HEAD stays right): see FAULTS."""
        assert kind in FAULTS
        self.faults[commit, filename] = kind

    def seen(self, method: str = "GET") -> list[str]:
        """The paths asked for with `method`, in order."""
        with self._lock:
            return [path for m, path in self.requests if m == method]

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> HubServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving and close the port: later connections are refused."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _resolve(self, repo: str, rev: str) -> str | None:
        commits = self.commits.get(repo, {})
        return rev if rev in commits else self.refs.get(repo, {}).get(rev)


def _handler(hub: HubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            self._answer(body=True)

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def _answer(self, body: bool) -> None:
            path = unquote(urlsplit(self.path).path)
            with hub._lock:
                hub.requests.append((self.command, path))
            info, file = _INFO.match(path), _FILE.match(path)
            match = info or file
            if match is None:
                return self._error(404, "")
            repo, rev = match["repo"], match["rev"] or "main"
            if repo not in hub.commits:
                return self._error(404, "RepoNotFound")
            commit = hub._resolve(repo, rev)
            if commit is None:
                return self._error(404, "RevisionNotFound")
            files = hub.commits[repo][commit]
            if info is not None:
                siblings = [{"rfilename": name} for name in sorted(files)]
                data = json.dumps({"id": repo, "modelId": repo, "sha": commit, "private": False, "siblings": siblings})
                return self._send(200, data.encode(), {"Content-Type": "application/json"}, body)
            name = match["file"]
            if name not in files:
                return self._error(404, "EntryNotFound", {"X-Repo-Commit": commit})
            self._file(files[name], commit, hub.faults.get((commit, name)) if body else None, body)

        def _file(self, content: bytes, commit: str, fault: str | None, body: bool) -> None:
            headers = {"X-Repo-Commit": commit, "ETag": f'"{hashlib.sha256(content).hexdigest()}"'}
            start = _range_start(self.headers.get("Range"))
            if fault == "500":
                return self._error(500, "")
            if fault == "drop" and start:  # the connection stays dead: a resumed download gets nothing
                self.close_connection = True
                return
            if fault == "truncate":
                return self._send(200, content[: len(content) // 2], headers, body)
            status = 200
            if start:
                status, headers["Content-Range"] = 206, f"bytes {start}-{len(content) - 1}/{len(content)}"
            if fault == "drop":  # announce the whole file, send half, hang up
                self.send_response(status)
                for key, value in {**headers, "Content-Length": str(len(content))}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(content[: len(content) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self._send(status, content[start:], headers, body)

        def _error(self, status: int, code: str, headers: dict[str, str] | None = None) -> None:
            extra = {**(headers or {}), **({"X-Error-Code": code} if code else {})}
            self._send(status, json.dumps({"error": code or "error"}).encode(), extra, True)

        def _send(self, status: int, content: bytes, headers: dict[str, str], body: bool) -> None:
            self.send_response(status)
            for key, value in {**headers, "Content-Length": str(len(content))}.items():
                self.send_header(key, value)
            self.end_headers()
            if body and self.command != "HEAD":
                self.wfile.write(content)

    return Handler


def _range_start(header: str | None) -> int:
    found = re.fullmatch(r"bytes=(\d+)-", header or "")
    return int(found[1]) if found else 0


def client_env(hub_url: str, home: Path) -> dict[str, str]:
    """The environment of a user's shell with downloads on, from `hub_url`, into a cache under `home`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HF_", "TRANSFORMERS_"))}
    env.update(
        HF_ENDPOINT=hub_url,
        HF_HOME=str(home),
        HF_HUB_CACHE=str(home / "hub"),
        HF_HUB_DISABLE_TELEMETRY="1",
        NO_PROXY="127.0.0.1,localhost",
        OMP_NUM_THREADS="1",
        PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]),
    )
    return env


def run_client(
    steps: list[dict[str, Any]], hub_url: str, home: Path, timeout: float = 180
) -> dict[str, dict[str, Any]]:
    """Run `steps` (see `_step`) in a fresh process downloading from `hub_url` into `home`; their results by the
    steps' ``id``."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__)), json.dumps(steps)],
        env=client_env(hub_url, home),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"the client failed ({done.returncode}):\n{done.stderr[-3000:]}"
    return json.loads(lines[-1])


def _step(step: dict[str, Any]) -> dict[str, Any]:
    """One step of the client: ``locate`` (`locate_model`; `env` set first, a None value unsets), ``score``
    (`bert_score` on a name or folder, F1 per pair), ``load`` (the loaders with trust_remote_code, the last
    layer's vectors of one text), ``transformers`` (AutoModel and AutoTokenizer from the cache alone), ``cli``
    (`bertscore_tm.cli.main` on ``args``, its output read as JSON)."""
    for key, value in step.get("env", {}).items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    kind, name = step["do"], step["name"]
    if kind == "cli":  # the command line, its standard output read as JSON
        from bertscore_tm.cli import main

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(step["args"])
        return {"rc": code, "json": json.loads(out.getvalue()) if code == 0 else None}
    options = {
        key: step[key] for key in ("revision", "local_files_only", "trust_remote_code", "progress") if key in step
    }
    if kind == "locate":
        from bertscore_tm.models.loading import locate_model

        location = locate_model(name, **options)
        return {"path": str(location.path), "commit": location.commit}
    if kind == "score":
        from bertscore_tm import BERTScore, bert_score

        options = {("verbose" if k == "progress" else k): v for k, v in options.items()}
        f1 = bert_score(step["preds"], step["refs"], name, num_layers=step["num_layers"], output="f1", **options)
        metric = BERTScore(name, num_layers=step["num_layers"], **options)
        return {"f1": f1.tolist(), "commit": metric.model_commit}
    if kind == "load":
        import torch

        from bertscore_tm.models.loading import load_encoder, locate_model
        from bertscore_tm.models.model_family import model_config
        from bertscore_tm.models.tokenizing import TextEncoder

        trust = bool(step.get("trust_remote_code", False))
        path = locate_model(name, **options).path
        config = model_config(path, trust_remote_code=trust)
        encoder, _ = load_encoder(path, 2, False, trust_remote_code=trust)
        ids, _ = TextEncoder(path, trust_remote_code=trust).encode([step["text"]])
        with torch.no_grad():
            vectors = encoder(ids.long()[None]).last_hidden_state
        return {"config": type(config).__name__, "model": type(encoder).__name__, "vectors": vectors.tolist()}
    if kind == "transformers":
        from transformers import AutoModel, AutoTokenizer

        model = AutoModel.from_pretrained(name, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=True)
        return {"model": type(model).__name__, "vocabulary": len(tokenizer)}
    raise ValueError(f"unknown step {kind!r}")


def _client(steps: list[dict[str, Any]]) -> None:
    import warnings

    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    results = {}
    for step in steps:
        stderr = io.StringIO()
        try:
            with contextlib.redirect_stderr(stderr):
                result = _step(step)
        except Exception as err:
            result = {
                "error": type(err).__name__,
                "bases": [cls.__name__ for cls in type(err).__mro__],
                "message": str(err),
                "argument": getattr(err, "argument", None),
            }
        results[step["id"]] = {**result, "stderr": stderr.getvalue()}
    print(json.dumps(results))


if __name__ == "__main__":
    _client(json.loads(sys.argv[1]))
