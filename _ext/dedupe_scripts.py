"""Drop repeated <script> entries from every page.

In this stack (Jupyter Book 1.0.4, sphinx-thebe 0.3.1, sphinx-togglebutton 0.4) some inline
configuration scripts are registered twice, once with filename None and once with "". The second
copy of sphinx-thebe's throws "Identifier 'THEBE_JS_URL' has already been declared" in the
browser console of every page. This extension keeps the first copy of each script.
"""


def _dedupe(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        attributes = getattr(script, "attributes", {})
        key = (getattr(script, "filename", script) or "", tuple(sorted(attributes.items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    scripts[:] = kept


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
