"""omectl: an asyncio multi-cluster controller for LLM serving on GPU fleets."""

__version__ = "0.1.0"
