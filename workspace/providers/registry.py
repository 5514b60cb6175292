"""Which provider serves a model: a registry of provider factories that third parties extend.

:func:`provider_for` asks each :class:`ProviderFactory` in turn whether it serves a model (and
``api_base``) and lets the first that says yes create the provider. The order:

1. factories registered at run time with :func:`register` (the latest first);
2. factories of installed packages, from the entry-point group ``robotlab_workspace.providers``
   (read once, on the first look-up; :func:`reload_entry_points` reads them again);
3. the built-ins: the offline demo (no model, or ``demo``/``offline``) and litellm, which serves
   every other model and so comes last.

Adding a provider from another package takes a factory and one entry point::

    # acme_robotlab/__init__.py
    class AcmeFactory:
        name = "acme"

        def matches(self, model: str | None, api_base: str | None) -> bool:
            return bool(model) and model.startswith("acme/")

        def create(self, model: str | None, *, api_base: str | None = None, config=None, **options):
            return AcmeProvider(model.removeprefix("acme/"))   # implements workspace.providers.Provider

    factory = AcmeFactory()

    # pyproject.toml
    [project.entry-points."robotlab_workspace.providers"]
    acme = "acme_robotlab:factory"

The entry point may name a factory, or a class or function that returns one when called without
arguments. One that fails to load is logged (with the package to fix) and skipped: a broken plugin
never keeps the built-in providers from working. In a script, ``register(AcmeFactory())`` does the
same without packaging.

``config`` is the merged configuration (anything with ``get("section.key", default)``), or None.
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
    "provider_for",
    "register",
    "reload_entry_points",
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


class LiteLLMFactory:
    """Every other model, through litellm: hosted providers and OpenAI-compatible local servers."""

    name = "litellm"

    def matches(self, model: str | None, api_base: str | None) -> bool:
        return not is_offline(model)

    def create(self, model: str | None, *, api_base: str | None = None, config: ConfigLookup | None = None,
               **options: Any) -> Provider:
        from workspace.providers.litellm_provider import LiteLLMProvider

        if model is None:
            raise ValueError("litellm needs a model id like 'openai/gpt-4o-mini'")
        kwargs: dict[str, Any] = {}
        if config is not None:
            kwargs["timeout"] = float(config.get("llm.timeout", 120.0))
            kwargs["max_retries"] = int(config.get("llm.max_retries", 3))
            kwargs["max_tool_result_chars"] = int(config.get("llm.max_tool_result_chars", 50_000))
            api_base = api_base or config.get("llm.api_base")
        kwargs.update(options)
        if api_base and "/" not in model:
            # A bare model name with a server address: that server speaks the OpenAI API (Ollama's /v1,
            # LM Studio, vLLM, llama.cpp); litellm would otherwise refuse the name ("LLM Provider NOT provided").
            model = f"openai/{model}"
        return LiteLLMProvider(model, api_base=api_base, **kwargs)


_BUILTIN: tuple[ProviderFactory, ...] = (DemoFactory(), LiteLLMFactory())
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
                 **options: Any) -> Provider:
    """The provider for ``model``: from the first factory that serves it (None or "demo": the offline demo)."""
    from workspace.secrets import register_url_secrets

    register_url_secrets(api_base)  # a password or key inside it is redacted wherever it shows up
    if config is not None:
        register_url_secrets(config.get("llm.api_base"))
    for factory in factories():
        if factory.matches(model, api_base):
            return factory.create(model, api_base=api_base, config=config, **options)
    raise ValueError(f"No provider serves the model {model!r}")  # litellm serves every model: not reached
