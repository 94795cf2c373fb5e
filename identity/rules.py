"""Which directory groups become which Django groups: a pure rule, no Django (docs/identity.md)."""
from __future__ import annotations

from dataclasses import dataclass, field


class GroupRuleError(ValueError):
    """A group mapping in the environment is malformed; the message says where."""


@dataclass(frozen=True)
class GroupRule:
    """Directory group names → Django group names.

    `mapping` renames (`idp-name=django-group`); `prefixes` keep names that start with one of them
    unchanged; with neither, every directory group is kept under its own name.
    """

    mapping: dict[str, str] = field(default_factory=dict)
    prefixes: tuple[str, ...] = ()

    def django_names(self, directory_names: list[str] | tuple[str, ...] | set[str]) -> set[str]:
        """The Django groups a user with these directory groups belongs to."""
        keep_all = not self.mapping and not self.prefixes
        names: set[str] = set()
        for name in directory_names:
            if not isinstance(name, str) or not name:
                continue
            if name in self.mapping:
                names.add(self.mapping[name])
            elif keep_all or any(name.startswith(p) for p in self.prefixes):
                names.add(name)
        return names

    def manages(self, django_name: str) -> bool:
        """Whether this rule decides membership of a Django group of this name by itself."""
        return django_name in self.mapping.values() or any(django_name.startswith(p) for p in self.prefixes)


def parse_group_map(raw: str, *, variable: str) -> dict[str, str]:
    """`idp-a=django-a,idp-b=django-b` → {"idp-a": "django-a", ...}; a clear error on bad input."""
    mapping: dict[str, str] = {}
    for item in raw.split(","):
        item = item.strip()
        if not item:
            continue
        source, sep, target = item.partition("=")
        if not sep or not source.strip() or not target.strip():
            raise GroupRuleError(f"{variable}: {item!r} is not of the form directory-group=django-group")
        if len(target.strip()) > 150:
            raise GroupRuleError(f"{variable}: the Django group name {target.strip()!r} is longer than 150 characters")
        mapping[source.strip()] = target.strip()
    return mapping


def parse_prefixes(raw: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in raw.split(",") if p.strip())


def parse_mirror(raw: str, *, variable: str) -> GroupRule:
    """LDAP_MIRROR_GROUPS: `all` (or empty), or a list of names and `prefix*` patterns."""
    raw = raw.strip()
    if raw.lower() in {"", "all", "*"}:
        return GroupRule()
    names: dict[str, str] = {}
    prefixes: list[str] = []
    for item in parse_prefixes(raw):
        if item.endswith("*"):
            if item == "*":
                raise GroupRuleError(f"{variable}: use 'all' to mirror every group")
            prefixes.append(item[:-1])
        else:
            names[item] = item
    return GroupRule(mapping=names, prefixes=tuple(prefixes))
