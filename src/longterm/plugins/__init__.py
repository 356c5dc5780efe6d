"""Plugins: how a model's encoder, a readout and a task's generator come in by import path, the
built-ins' exactly as a user's (docs/plugins.md). `resolve` imports what a path names and nothing
heavier; `keys` checks a plugin's own keys against its signature. Imports only `choices`.
"""
