"""Small project factories for tests, and polling."""

from __future__ import annotations

import time
from pathlib import Path

from fyan.project import Project
from fyan.specifier.ingest import ingest
from fyan.state.gateway import Gateway

CHAIN_TEX = r"""\begin{definition}\label{def:a} An integer is \textbf{nice} if it is even.\end{definition}
\begin{lemma}\label{lem:b} Every nice integer is even. \end{lemma}
\begin{theorem}\label{thm:c} By Lemma~\ref{lem:b}, 4 is even. \end{theorem}
"""


def user_documentation(root: Path) -> str:
    """The README and every page of the documentation site (``docs/``, what ``mkdocs.yml``
    builds), joined: the user guide moved out of the README into ``docs/``, so a fact the
    program states must be in one of them."""
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    return "\n".join(page.read_text(encoding="utf-8") for page in pages)


def make_project(root: Path, tex: str = CHAIN_TEX, extra_toml: str = "") -> Project:
    (root / "source").mkdir(parents=True, exist_ok=True)
    (root / "source" / "doc.tex").write_text(tex, encoding="utf-8")
    (root / "fyan.toml").write_text(
        f'[project]\nname = "t"\nsource = "source/doc.tex"\n{extra_toml}', encoding="utf-8"
    )
    return Project.open(root)


def ingested(root: Path, tex: str = CHAIN_TEX, checks=None, extra_toml: str = "") -> tuple[Project, Gateway]:
    project = make_project(root, tex, extra_toml)
    gateway = Gateway(project, checks)
    ingest(project, gateway)
    return project, gateway


def wait_for(predicate, timeout: float = 90.0, step: float = 0.1):
    """Poll ``predicate`` until it returns something true (returned); AssertionError after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("timed out")


class ModelsEndpoint:
    """Stands in for an OpenAI-compatible model server's ``GET /v1/models`` (vLLM, llama.cpp's
    ``llama-server``, Ollama all serve it): a real HTTP server on a free loopback port answering
    ``{"object": "list", "data": [{"id": "m"}]}``, enough for Fyan's up-front check that
    something listens (``fyan.agents.preflight.endpoint_refusal``). ``url`` is its base URL
    (``http://127.0.0.1:<port>/v1``). Use as a context manager."""

    def __enter__(self) -> ModelsEndpoint:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                data = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
                self.send_response(200 if self.path == "/v1/models" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def refused_url() -> str:
    """The base URL of a loopback port nothing listens on (bound, then closed): connecting is
    refused (ECONNREFUSED), as when the model server was never started."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/v1"
