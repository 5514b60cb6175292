"""Is the local model server up? A TCP probe, no request sent."""

from __future__ import annotations

import socket

from workspace.providers import local_server, probe_local_server


def test_which_models_need_a_local_server() -> None:
    assert local_server(None) is None and local_server("openai/gpt-4o-mini") is None
    assert local_server("ollama_chat/llama3.1") == "http://localhost:11434"
    assert local_server("openai/x", "http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert local_server("openai/x", "https://api.example.com/v1") is None


async def test_a_listening_server_is_fine_and_a_closed_port_says_what_to_do() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        assert await probe_local_server("openai/x", f"http://127.0.0.1:{port}/v1") is None
    finally:
        listener.close()
    problem = await probe_local_server("openai/x", f"http://127.0.0.1:{port}/v1")
    assert problem is not None and f"http://127.0.0.1:{port}/v1" in problem and "Settings" in problem
