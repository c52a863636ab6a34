"""The review-quality benchmark (bench/bench_quality.py): real bug fixes, reversed, reviewed by the real CLI."""
