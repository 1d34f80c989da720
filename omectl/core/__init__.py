"""Pure, synchronous decision logic (merges, chains, rendering). No I/O, no asyncio, nothing else of omectl."""
