" The tiller chat is markdown (highlighted by treesitter where the parser is available).
if exists('b:current_syntax')
  finish
endif
runtime! syntax/markdown.vim
unlet! b:current_syntax
syntax match tillerTool /^[✓✗⋯] \S\+/
highlight default link tillerTool Special
let b:current_syntax = 'tiller'
