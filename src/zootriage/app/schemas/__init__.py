"""Request and response bodies of the public API."""
