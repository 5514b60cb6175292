"""Every model litellm supports, behind the small :class:`~workspace.providers.base.Provider` protocol.

This is the only module of the core that imports ``litellm``, and it does so lazily (the import
takes seconds): importing this module costs nothing, the first :meth:`LiteLLMProvider.stream`
(or :func:`load_litellm` / :func:`preload_litellm`) pays for it once, with a ``loading`` status.

What the providers of real models share — retries, waits people see, time limits, one request at a
time to a local server, empty streams and HTML pages that say what they mean — is in
:class:`~workspace.providers.streaming.StreamingProvider`. What is litellm's:

- the transcript in OpenAI chat messages (litellm translates those for every other provider), an
  assistant tool-call turn with ``"content": ""`` for OpenAI-style servers (some local ones reject a
  missing content; for Anthropic, litellm would turn ``""`` into a placeholder sentence, so it gets
  ``None``);
- a missing API key is an immediate error naming the variable and Settings (a key stored in the
  system keyring is used first), never a request that fails with "HTTP 500" after retries;
- cost from litellm's local price map; None (unknown) for local servers and unpriced models;
- litellm's log lines go through the workspace's logging (the log file), never to the terminal;
- no redirect is followed (litellm's clients would, and httpx drops only ``Authorization`` when one
  changes origin: Anthropic's ``x-api-key`` went along): an ``api_base`` answering 3xx is an error naming
  where it pointed;
- keeping litellm's per-call overhead down (a streamed tool round trip to a loopback server took
  ~25-30 ms through ``litellm.acompletion`` as documented, ~10 ms here, ~6.5 ms with the OpenAI
  SDK by hand; see ``bench/``):

  * when litellm sent the request through the OpenAI SDK (OpenAI and every OpenAI-compatible
    server), the SDK's raw chunks are read directly, skipping litellm's per-chunk re-wrapping;
  * otherwise (Anthropic, Gemini, ...) litellm's normalised chunks are read until the finish
    chunk, then the rest of the provider's stream (usage, end marker) is drained directly. Asking
    litellm for more would run its end-of-stream logging, twice per stream: ``stream_chunk_builder``
    in a worker thread, cost lookups, a deep copy and success-callback dispatch;
  * litellm's retries are off (``num_retries=0``, ours are in the base class), and the lazy imports
    of its first call (the OpenAI SDK's resources, tiktoken's encoding) happen in the import thread.

OpenAI-compatible servers with an ``api_base`` are served by the lean provider
(:mod:`workspace.providers.openai_provider`) unless ``llm.provider: litellm`` says otherwise.

The package: :mod:`.loading` (the lazy import, its warm-up, its logging and redirects), :mod:`.models` (what
litellm's model map says of a model), :mod:`.provider` (the providers). Only this package imports litellm.
"""

from workspace.providers.litellm_provider.loading import (
    LITELLM_LOGGERS,
    is_loaded,
    load_litellm,
    preload_litellm,
)
from workspace.providers.litellm_provider.models import (
    context_window,
    known_chat_models,
    load_for,
    missing_keys,
    supports_vision,
    token_counter,
)
from workspace.providers.litellm_provider.provider import (
    LOCAL_PREFIXES,
    PLACEHOLDER_KEY,
    LiteLLMProvider,
    RouterProvider,
)

__all__ = [
    "LITELLM_LOGGERS",
    "LOCAL_PREFIXES",
    "PLACEHOLDER_KEY",
    "LiteLLMProvider",
    "RouterProvider",
    "context_window",
    "is_loaded",
    "known_chat_models",
    "load_for",
    "load_litellm",
    "missing_keys",
    "preload_litellm",
    "supports_vision",
    "token_counter",
]
