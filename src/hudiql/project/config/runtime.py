"""What one command runs with: the project, the profile's target, ``--full-refresh``, and the
invocation's id and start time (the ``metadata`` of every artifact, ``invocation_id`` in Jinja).

Example:
    >>> from pathlib import Path
    >>> from hudiql.project.config.profile import Target
    >>> from hudiql.project.config.project import Project
    >>> config = RuntimeConfig(Project(Path("/p"), "shop", "shop"), Target("dev", "shop", "/p/warehouse"))
    >>> len(config.invocation_id), config.full_refresh
    (36, False)
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass, field

from hudiql.project.config.profile import Target
from hudiql.project.config.project import Project


@dataclass
class RuntimeConfig:
    project: Project
    target: Target
    full_refresh: bool = False
    run_started_at: datetime.datetime = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc))
    invocation_id: str = field(default_factory=lambda: str(uuid.uuid4()))
