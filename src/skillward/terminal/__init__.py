"""The terminal: all output to a person and the prompts that ask them (the only layer
importing rich).

May import: ``core``, ``trust``, ``terminal``, and the host's public types.
"""
