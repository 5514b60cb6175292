"""Which provider serves a model: a registry of provider factories that third parties extend.

:func:`provider_for` asks each :class:`ProviderFactory` in turn whether it serves a model (and
``api_base``) and lets the first that says yes create the provider. The order:

1. factories registered at run time with :func:`register` (the latest first);
2. factories of installed packages, from the entry-point group ``robotlab_workspace.providers``
   (read once, on the first look-up; :func:`reload_entry_points` reads them again);
3. the built-ins: the offline demo (no model, or ``demo``/``offline``), the lean provider for
   OpenAI-compatible servers (a model with an ``api_base`` such as ``openai/NAME``, a bare name,
   ``hosted_vllm/…``, ``lm_studio/…``; see :func:`workspace.providers.openai_provider.serves`) and
   litellm, which serves every other model and so comes last. ``llm.provider`` (``auto``,
   ``litellm``, ``openai``) overrides the choice between the last two.

A model's ``api_base`` is the one given, else the configuration's ``llm.api_base``: factories see
it in ``matches`` too.

Adding a provider from another package takes a factory and one entry point::

    # acme_robotlab/__init__.py
    class AcmeFactory:
        name = "acme"

        def matches(self, model: str | None, api_base: str | None) -> bool:
            return bool(model) and model.startswith("acme/")

        def create(self, model: str | None, *, api_base: str | None = None, config=None, **options):
            return AcmeProvider(model.removeprefix("acme/"))   # a workspace.providers.base.ProviderBase

    factory = AcmeFactory()

    # pyproject.toml
    [project.entry-points."robotlab_workspace.providers"]
    acme = "acme_robotlab:factory"

The entry point may name a factory, or a class or function that returns one when called without
arguments. One that fails to load is logged (with the package to fix) and skipped: a broken plugin
never keeps the built-in providers from working. In a script, ``register(AcmeFactory())`` does the
same without packaging.

``config`` is the merged configuration (anything with ``get("section.key", default)``), or None.

A provider that does not inherit :class:`~workspace.providers.base.ProviderBase` (with only the protocol's
required members: ``label``, ``model_id``, the flags and ``stream``) is wrapped once here, in
:class:`~workspace.providers.base.WithDefaults`, so the rest of the program asks every capability directly.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from workspace.providers.base import ConfigLookup, Provider

__all__ = [
    "ENTRY_POINT_GROUP",
    "OFFLINE_NAMES",
    "ProviderFactory",
    "factories",
    "is_offline",
    "litellm_separate",
    "provider_for",
    "register",
    "reload_entry_points",
    "set_litellm_process",
    "unregister",
]

log = logging.getLogger(__name__)

#: The entry-point group third-party packages register provider factories in.
ENTRY_POINT_GROUP = "robotlab_workspace.providers"
#: Model names that mean the offline demo.
OFFLINE_NAMES = frozenset({"", "demo", "offline", "offline-demo", "none"})


def is_offline(model: str | None) -> bool:
    """Whether ``model`` means the offline demo (no model at all)."""
    return model is None or model.strip().lower() in OFFLINE_NAMES


@runtime_checkable
class ProviderFactory(Protocol):
    """Creates the providers of the models it serves."""

    #: A short unique name (registering another factory of the same name replaces this one).
    name: str

    def matches(self, model: str | None, api_base: str | None) -> bool:
        """Whether this factory serves ``model`` (with ``api_base``, when one is given)."""
        ...

    def create(self, model: str | None, *, api_base: str | None = None, config: ConfigLookup | None = None,
               **options: Any) -> Provider:
        """The provider for ``model``; ``options`` are passed on from :func:`provider_for`."""
        ...


class DemoFactory:
    """The offline demo: no model (or ``demo``/``offline``), no key, not a language model."""

    name = "demo"

    def matches(self, model: str | None, api_base: str | None) -> bool:
        return is_offline(model)

    def create(self, model: str | None, *, api_base: str | None = None, config: ConfigLookup | None = None,
               **options: Any) -> Provider:
        from workspace.providers.demo import DemoProvider

        delay = float(config.get("demo.delay", 0.015)) if config is not None else 0.015
        return DemoProvider(delay=options.get("delay", delay))


def provider_options(config: ConfigLookup | None, model: str | None = None) -> dict[str, Any]:
    """What the configuration says about calling ``model`` (``llm.*``), as provider keyword arguments."""
    if config is None:
        return {}
    out: dict[str, Any] = {
        "timeout": float(config.get("llm.timeout", 120.0)),
        "max_retries": int(config.get("llm.max_retries", 3)),
        "max_tool_result_chars": int(config.get("llm.max_tool_result_chars", 50_000)),
    }
    answer = config.get("llm.max_answer_chars")
    if answer is not None:
        out["max_answer_chars"] = int(answer)
    for key, name in (("first_token_timeout", "first_token_timeout"), ("idle_timeout", "idle_timeout"),
                      ("max_wait", "max_wait")):
        value = config.get(f"llm.{key}")
        if value is not None:
            out[name] = float(value)
    limit = config.get("llm.max_concurrent_requests")
    if limit is not None:
        out["max_concurrent"] = int(limit)
    from workspace.attachments import VISION_KEY, vision_setting  # the standard library only

    vision = vision_setting(config.get(VISION_KEY), model)
    if vision is not None:  # else litellm's model map says it (a local server: nobody knows)
        out["vision"] = vision
    return out


class OpenAICompatibleFactory:
    """OpenAI-compatible servers (llama.cpp, LM Studio, vLLM, Ollama's /v1, ...) through the openai SDK
    alone: no litellm import, little per-call work (see :mod:`workspace.providers.openai_provider`)."""

    name = "openai-compatible"

    def matches(self, model: str | None, api_base: str | None) -> bool:
        from workspace.providers.openai_provider import serves

        return not is_offline(model) and serves(model, api_base)

    def create(self, model: str | None, *, api_base: str | None = None, config: ConfigLookup | None = None,
               **options: Any) -> Provider:
        from workspace.providers.openai_provider import OpenAICompatibleProvider

        if model is None:
            raise ValueError("an OpenAI-compatible server needs a model name")
        kwargs = provider_options(config, model)
        kwargs.update(options)
        return OpenAICompatibleProvider(model, api_base=api_base or _configured_base(config), **kwargs)


def _configured_base(config: ConfigLookup | None) -> str | None:
    value = config.get("llm.api_base") if config is not None else None
    return str(value) if value else None


class LiteLLMFactory:
    """Every other model, through litellm: hosted providers and OpenAI-compatible local servers."""

    name = "litellm"

    def matches(self, model: str | None, api_base: str | None) -> bool:
        return not is_offline(model)

    def create(self, model: str | None, *, api_base: str | None = None, config: ConfigLookup | None = None,
               **options: Any) -> Provider:
        from workspace.providers.litellm_provider import LiteLLMProvider

        cls = LiteLLMProvider
        if litellm_separate(config):
            from workspace.providers.litellm_process import SeparateLiteLLMProvider

            cls = SeparateLiteLLMProvider
        if model is None:
            raise ValueError("litellm needs a model id like 'openai/gpt-4o-mini'")
        kwargs = provider_options(config, model)
        api_base = api_base or _configured_base(config)
        kwargs.update(options)
        if api_base and "/" not in model:
            # A bare model name with a server address: that server speaks the OpenAI API (Ollama's /v1,
            # LM Studio, vLLM, llama.cpp); litellm would otherwise refuse the name ("LLM Provider NOT provided").
            model = f"openai/{model}"
        return cls(model, api_base=api_base, **kwargs)


#: What ``auto`` means in this program: "same" (the command line, the library) unless it says otherwise.
_litellm_auto = "same"


def set_litellm_process(where: str) -> None:
    """What ``llm.litellm_process: auto`` means in this program: ``separate`` (the window: litellm in a
    process of its own, see :mod:`workspace.providers.litellm_process`) or ``same``."""
    global _litellm_auto
    if where not in ("same", "separate"):
        raise ValueError(f"litellm runs in the 'same' process or a 'separate' one, not {where!r}")
    _litellm_auto = where


def litellm_separate(config: ConfigLookup | None) -> bool:
    """Whether litellm runs in a process of its own (``llm.litellm_process``; ``auto``: this program's choice)."""
    choice = str(config.get("llm.litellm_process", "auto") or "auto") if config is not None else "auto"
    if choice == "auto":
        choice = _litellm_auto
    return choice == "separate"


_BUILTIN: tuple[ProviderFactory, ...] = (DemoFactory(), OpenAICompatibleFactory(), LiteLLMFactory())
#: ``llm.provider`` values and the built-in factory each one skips.
PROVIDER_CHOICES = ("auto", "litellm", "openai")
_registered: list[ProviderFactory] = []
_from_entry_points: list[ProviderFactory] | None = None
_lock = threading.Lock()


def register(factory: ProviderFactory) -> ProviderFactory:
    """Put ``factory`` first in line (replacing a registered factory of the same name); returns it,
    so it can decorate an instance-returning class or be kept for :func:`unregister`."""
    if isinstance(factory, type) or not isinstance(factory, ProviderFactory):
        raise TypeError(f"{factory!r} is not a provider factory (an instance): it needs a 'name', matches(model, api_base) "
                        "and create(model, *, api_base, config, **options)")
    with _lock:
        _registered[:] = [f for f in _registered if f.name != factory.name]
        _registered.insert(0, factory)
    return factory


def unregister(name: str) -> bool:
    """Remove the factory registered at run time under ``name``; True if there was one."""
    with _lock:
        before = len(_registered)
        _registered[:] = [f for f in _registered if f.name != name]
        return len(_registered) != before


def reload_entry_points() -> list[ProviderFactory]:
    """Read the ``robotlab_workspace.providers`` entry points again (after installing a plugin into a
    running process); returns the factories found."""
    global _from_entry_points
    found: list[ProviderFactory] = []
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(getattr(point, "dist", None), "name", None) or "an installed package"
        try:
            factory = point.load()
            if isinstance(factory, type) or (callable(factory) and not isinstance(factory, ProviderFactory)):
                factory = factory()  # a factory class, or a function that returns a factory
        except Exception as exc:
            log.warning("The provider entry point %r of %s could not be loaded and is skipped: %s. "
                        "Update or uninstall that package.", point.name, dist, exc)
            continue
        if not isinstance(factory, ProviderFactory):
            log.warning("The provider entry point %r of %s (%s) is not a provider factory (it needs a 'name', "
                        "matches() and create()) and is skipped.", point.name, dist, point.value)
            continue
        found.append(factory)
    with _lock:
        _from_entry_points = found
    return list(found)


def factories() -> list[ProviderFactory]:
    """Every factory, in the order :func:`provider_for` asks them."""
    plugins = _from_entry_points
    if plugins is None:
        plugins = reload_entry_points()
    with _lock:
        return [*_registered, *plugins, *_BUILTIN]


def provider_for(model: str | None, *, api_base: str | None = None, config: ConfigLookup | None = None,
                 folder_written: bool = False, **options: Any) -> Provider:
    """The provider for ``model``: from the first factory that serves it (None or "demo": the offline demo).

    ``api_base`` defaults to the configuration's ``llm.api_base``; ``options`` (``api_key``, ...) go to
    the factory's ``create``. ``folder_written``: ``api_base`` was written in a file of the opened folder.
    When the address is not one the user configured (:func:`workspace.urls.key_may_go`), the factory gets
    ``user_key=False``: the provider sends no key of the user's (environment or keyring), only an
    ``api_key`` given here."""
    from workspace.providers.base import with_defaults
    from workspace.secrets import register_url_secrets
    from workspace.urls import key_may_go

    register_url_secrets(api_base)  # a password or key inside it is redacted wherever it shows up
    if config is not None:
        register_url_secrets(config.get("llm.api_base"))
    base = api_base or _configured_base(config)
    if not is_offline(model) and not options.get("api_key") and \
            not key_may_go(base, config=config, folder_written=folder_written and bool(api_base)):
        log.info("%s: %s is not an address you configured (it comes from the opened folder): called without "
                 "your API key", model, base)
        options["user_key"] = False
    choice = str(config.get("llm.provider", "auto") or "auto") if config is not None else "auto"
    for factory in factories():
        if isinstance(factory, OpenAICompatibleFactory) and choice != "auto":
            from workspace.providers.openai_provider import serves

            if not is_offline(model) and serves(model, base, choice=choice):
                return factory.create(model, api_base=base, config=config, **options)
            continue
        if factory.matches(model, base):
            # Another package's provider may have only the required members: the defaults fill in the rest.
            return with_defaults(factory.create(model, api_base=api_base, config=config, **options))
    raise ValueError(f"No provider serves the model {model!r}")  # litellm serves every model: not reached
