"""Who may call what: the access policy, decided by the settings (above all the bind address).

The embedded default listens on loopback, where only local users can reach it, and stays open there
(writes only until the first key exists). Anywhere else a key is required for reads, writes and
/metrics unless the settings open them explicitly, and the server will not start when no key exists
to be used, since it would be either locked or, if opened, open to the network.
"""

from __future__ import annotations

import enum
import ipaddress

from zootriage.app.api_keys import keys_configured
from zootriage.app.db.session import get_sessionmaker
from zootriage.app.settings import AccessMode, Settings


class Rule(enum.StrEnum):
    open = "open"
    key = "key"
    until_first_key = "until_first_key"


class UnsafeBind(RuntimeError):
    """The settings would serve the network with no key anyone could use."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


def access_rule(mode: AccessMode, host: str, on_loopback: Rule = Rule.open) -> Rule:
    """``auto`` becomes ``on_loopback`` when ``host`` is a loopback address and ``key`` elsewhere."""
    if mode != "auto":
        return Rule(mode)
    return on_loopback if is_loopback(host) else Rule.key


def read_rule(settings: Settings) -> Rule:
    return access_rule(settings.read_access, settings.host)


def write_rule(settings: Settings) -> Rule:
    return access_rule(settings.write_access, settings.host, Rule.until_first_key)


def metrics_rule(settings: Settings) -> Rule:
    return access_rule(settings.metrics_access, settings.host)


def check_bind(settings: Settings) -> None:
    """Raise :class:`UnsafeBind` when ``settings.host`` is off loopback and no key is configured."""
    if is_loopback(settings.host) or settings.allow_no_keys:
        return
    with get_sessionmaker(settings.effective_database_url)() as session:
        if keys_configured(session, settings.api_key_hashes):
            return
    raise UnsafeBind(
        f"refusing to serve on {settings.host}, which is not loopback, with no API key configured: "
        "create one with `zootriage api-keys create NAME --scope admin` (or give its hash in "
        "ZOOTRIAGE_API_KEY_HASHES), or set ZOOTRIAGE_ALLOW_NO_KEYS=true to start anyway"
    )
