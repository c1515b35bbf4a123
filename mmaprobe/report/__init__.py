"""The results page's Jinja2 template (``page.html.j2``), rendered by ``mmaprobe report``."""
