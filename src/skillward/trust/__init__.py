"""Trust decisions: approvals and their store, policy, the gates, and the audit trail.

Every grant a person or an administrator makes, remembered, narrowed and recorded.
Deny by default.

May import: ``core``, ``edge`` and ``trust``.
"""
