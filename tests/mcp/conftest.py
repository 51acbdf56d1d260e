"""The MCP tests: fixtures come from tests/conftest.py."""
