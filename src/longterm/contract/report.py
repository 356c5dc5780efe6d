"""What a contract check reports (contract/): its checks on one encoder, readout or task, each
passed or failed, in order, and the facts it measured without judging them."""

from dataclasses import dataclass, field


@dataclass
class Check:
    ok: bool
    what: str


@dataclass
class Report:
    """The checks on one model or task, in order; `facts` are measured, not judged."""

    subject: str
    checks: list[Check] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def add(self, ok: bool, what: str) -> bool:
        self.checks.append(Check(bool(ok), what))
        return bool(ok)

    def __str__(self) -> str:
        lines = [self.subject]
        lines += [f"  {'ok  ' if c.ok else 'FAIL'}  {c.what}" for c in self.checks]
        lines += [f"  info  {k}: {v}" for k, v in self.facts.items()]
        return "\n".join(lines)
