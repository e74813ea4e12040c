"""skillward in agent frameworks: its tools, and each framework's approval mechanism as the
way the person is asked, over one :class:`~skillward.host.SkillHost`.

* :mod:`skillward.integrations.pydantic_ai` (``pip install 'skillward[pydantic-ai]'``): a
  toolset, and a bridge to pydantic-ai's deferred tool approvals.
* :mod:`skillward.integrations.openai_agents` (``pip install 'skillward[openai-agents]'``):
  function tools whose ``needs_approval`` is the skill's verdict, and the person's answers
  applied to a run's state.

Each imports its framework, which nothing else in skillward does: importing ``skillward``
imports neither. Both are thin: the host prepares, the framework asks, the host loads
(``_calls``, which imports no framework).

May import: ``core``, ``trust``, ``host`` (its public names, from ``skillward.host``
itself) and ``integrations``; public modules only.
"""
