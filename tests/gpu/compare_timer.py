"""Compares a report.json with the script's own timer.json (medians over the timed
requests): prints TTFT and TPOT from both and their difference, and the steps and prompt.
Usage: compare_timer.py REPORT.json TIMER.json"""
import json
import statistics
import sys

rep, tim = (json.load(open(p)) for p in sys.argv[1:3])
reqs = [r for r in tim["requests"] if not r.get("warmup")]
llm = rep["llm"]


def line(what, ours, theirs):
    if ours is None or theirs is None:
        print(f"  {what}: llmprof {ours}, timer {theirs}")
    else:
        print(f"  {what}: llmprof {ours:.3f} ms, timer {theirs:.3f} ms, "
              f"{100 * (ours - theirs) / theirs:+.2f} %")


def med(key):
    v = [r[key] for r in reqs if key in r]
    return statistics.median(v) if v else None


line("TTFT", llm["ttft_s"] and llm["ttft_s"] * 1e3, med("ttft_ms") or med("prefill_ms"))
line("TPOT", llm["tpot_s"] and llm["tpot_s"] * 1e3, med("tpot_ms"))
steps = sum(r.get("decode_steps", 0) for r in reqs)
print(f"  steps: llmprof {llm['decode_steps']} ({llm['steps_source']}), timer {steps}; "
      f"requests {llm['requests']} vs {len(reqs)}; prompt {llm['prompt_tokens']} "
      f"({llm['prefill_tokens_source']}), batch {llm['batch']} ({llm['batch_source']}); "
      f"warm-up found: {rep['warmup_found'] and rep['warmup_found']['cause']}")
