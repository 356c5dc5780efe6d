"""The launchers' sections of the config schema (conf/launcher/*.yaml; config/schema.py's
TrainConfig takes one of them): where and how a sweep's jobs run, never what they compute."""

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from longterm.config.schema_parts import Section, count_or_auto


class LocalLauncher(Section):
    name: Literal["local"]


class ParallelLauncher(Section):
    """Jobs side by side on this machine (conf/launcher/parallel.yaml): at most `jobs` at a time,
    `threads` each; `auto` is resolved when the sweep starts (hydra_plugins/longterm_launcher)."""

    name: Literal["parallel"]
    jobs: Annotated[Any, count_or_auto(1)]
    threads: Annotated[Any, count_or_auto(1)]


class PackedLauncher(ParallelLauncher):
    """The jobs of a multirun that differ only in lr, seed and trainer.max_epochs train as members
    of packs, one process each, packs side by side as under launcher=parallel
    (conf/launcher/packed.yaml, longterm.sweeps.pack); `members`: the most members of one pack."""

    name: Literal["packed"]
    members: Annotated[Any, count_or_auto(1)]
    vectorise: bool | Literal["auto"]


class SubmititLocalLauncher(Section):
    """Jobs through submitit (conf/launcher/submitit_local.yaml, slurm.yaml); `members`: runs
    per job, packed above 1 (hydra_plugins/longterm_launcher/submitit_packed.py)."""

    name: Literal["submitit_local"]
    time_min: int = Field(ge=1)
    gpus: int = Field(ge=0)
    cpus: int = Field(ge=1)
    mem_gb: float = Field(gt=0)
    members: Annotated[Any, count_or_auto(1)]


# SLURM sends a job's --signal up to this many seconds earlier than asked (sbatch(1), --signal).
SIGNAL_SLACK_S = 60


def longest_signal_delay(time_min: int) -> int:
    """The longest `signal_delay_s` a `time_min` limit allows: the time-limit signal (sent up to
    SIGNAL_SLACK_S early) leaves at least half the limit to train, and comes late enough that
    submitit counts it as a time-out, after min(0.8 limit, limit - 10 min) of the job
    (submitit/core/job_environment.py, SignalHandler.has_timed_out). Negative: none does."""
    limit = time_min * 60
    return min(limit // 2, max(limit // 5, 600)) - SIGNAL_SLACK_S


def shortest_time_min(signal_delay_s: int) -> int:
    """The shortest `time_min` with room for `signal_delay_s` (see longest_signal_delay)."""
    time_min = 1
    while longest_signal_delay(time_min) < signal_delay_s:
        time_min += 1
    return time_min


class SlurmLauncher(SubmititLocalLauncher):
    name: Literal["slurm"]
    partition: str | None
    max_num_timeout: int = Field(ge=0)
    signal_delay_s: int = Field(ge=0, le=65535)  # sbatch --signal=USR2@signal_delay_s

    @model_validator(mode="after")
    def signal_leaves_time_to_train(self) -> "SlurmLauncher":
        longest = longest_signal_delay(self.time_min)
        if self.signal_delay_s > longest:
            instead = f" or signal_delay_s <= {longest}" if longest >= 0 else ""
            raise ValueError(
                f"time_min={self.time_min} is too short for signal_delay_s={self.signal_delay_s}:"
                f" SLURM signals up to signal_delay_s + {SIGNAL_SLACK_S} s before the limit, and "
                "that must leave half the limit to train and count as a time-out in submitit; "
                f"use time_min >= {shortest_time_min(self.signal_delay_s)}{instead}"
            )
        return self
