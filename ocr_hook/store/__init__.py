"""What ocr-hook keeps on disk between runs, under `cache_dir`: the result cache (an unchanged re-run makes no
request), review memory (what the last review of a line of work found, so a re-review converges), the JSON
file store both are built on, and the atomic writer every file ocr-hook writes goes through. It sits above the
findings stage (it serialises findings) and below the agent and the commands; a file here is complete or
absent, and a corrupt entry is a miss, never an error.
"""
