"""Web pages served by the API process: Jinja2 templates, HTMX for partial updates, SVG plots."""
