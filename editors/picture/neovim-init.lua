-- docs/editors.md's Neovim configuration, plus line numbers and true colours for the picture
-- (editors/picture/make_neovim_pictures.py).
vim.lsp.config("ocr_hook", {
  cmd = { "ocr-hook", "lsp" },
  root_markers = { ".git" },
})
vim.lsp.enable("ocr_hook")
vim.diagnostic.config({ virtual_text = true })
vim.o.number = true
vim.o.termguicolors = true
vim.cmd("colorscheme default")
