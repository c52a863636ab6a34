"""`ocr-hook lsp`: a language server that shows what reviews already produced (DESIGN.md 21).

Diagnostics come from the repository's last review (review memory) or a CI report (`--from`); code actions
apply a fix (the edit `ocr-hook apply` makes) or record a dismissal (the entry `ocr-hook dismiss` writes).
Nothing here asks a model: only the `ocr-hook.review` command, when the user invokes it, runs a review, and
that is the CLI's own. Needs the `editor` extra (pygls); `import ocr_hook` never loads this package.
"""
