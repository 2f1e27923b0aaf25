"""Tables for issue 21 items 3-4 from the bench's per-question logs (python runs/summarise.py)."""
import json, sys, collections
sys.path.insert(0, "/work/wt-figs")
from pcmem.bench.locomo import ResultLog, summarise

def rows(path):
    out = collections.defaultdict(dict)
    for line in open(path):
        r = json.loads(line)
        if "result" in r:
            x = r["result"]; q = x["question"]
            out[(r["embedder"], r["mode"], r["rerank"])][(q["conversation"], q["index"])] = x
    return out

def fmt(v):
    return "" if v is None else (f"{v:.0f}" if isinstance(v, float) and v >= 100 else f"{v:.3f}" if isinstance(v, float) else str(v))

def rerank_table(path_a, path_l):
    a, l = rows(path_a), rows(path_l)
    stages = {**{k: v for k, v in a.items()}, **{k: v for k, v in l.items() if k[2] == "listwise"}}
    dec = stages.get(("minilm-l6-int8", "hybrid", "decision"), {})
    fill = stages.get(("minilm-l6-int8", "hybrid", "decision-fill"), {})
    lw = stages.get(("minilm-l6-int8", "hybrid", "listwise"), {})
    none = stages[("minilm-l6-int8", "hybrid", "none")]
    common_dec = sorted(set(dec) & set(fill))
    out = ["| policy | questions | n | frac@5 | frac@10 | nDCG@10 | rerank ms p50 | rerank ms p95 | decision calls | fallback rate | failures |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    from pcmem.bench.locomo import QuestionResult
    def line(name, which, keys, stage):
        res = [QuestionResult.from_json(stage[k]) for k in keys]
        s = summarise(res)
        out.append(f"| {name} | {which} | {s['n']} | {fmt(s['frac@5'])} | {fmt(s['frac@10'])} | {fmt(s['ndcg@10'])} | "
                   f"{fmt(s.get('rerank_ms_p50'))} | {fmt(s.get('rerank_ms_p95'))} | {s.get('decision_calls', '')} | "
                   f"{fmt(s.get('fallback_rate'))} | 0 |")
    line("coarse (no rerank)", "all 100", sorted(none), none)
    if common_dec:
        line("coarse (no rerank)", "decision subset", common_dec, none)
        line("decision", "decision subset", common_dec, dec)
        line("decision-fill", "decision subset", common_dec, fill)
    if lw:
        keys = sorted(lw)
        line("coarse (no rerank)", "listwise subset", keys, none)
        line("listwise", "listwise subset", keys, lw)
    return "\n".join(out), dec, none

def verdicts(dec):
    ev, non = [], []
    for x in dec.values():
        evidence = set(x["question"]["evidence"])
        for d in x["decisions"]:
            (ev if x["pool"][d["rank"] - 1] in evidence else non).append(d)
    def auc(pos, neg):
        if not pos or not neg: return None
        wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
        return wins / (len(pos) * len(neg))
    yes = lambda ds: sum(d["outcome"] == "yes" for d in ds)
    return (f"verdicts: {len(ev)} on evidence turns ({yes(ev)} yes), {len(non)} on other turns ({yes(non)} yes); "
            f"AUC of P(yes) evidence vs other: {fmt(auc([d['yes_probability'] for d in ev], [d['yes_probability'] for d in non]))}")

if __name__ == "__main__":
    table, dec, none = rerank_table("runs/a/rerank.jsonl", "runs/l/listwise.jsonl")
    print(table); print(); print(verdicts(dec))


def embedder_table():
    """Conversations 0,1 (231 questions); every row from a store holding exactly those two conversations."""
    from pcmem.bench.locomo import QuestionResult
    import os
    sources = [("runs/b/check-fresh.jsonl", lambda k: k[0] == "minilm-l6-int8"),
               ("runs/b/b1.jsonl", lambda k: k[0] != "minilm-l6-int8" or k[2] == "embedding"),
               ("runs/b/c01.jsonl", lambda k: True)]
    stages = {}
    for path, keep in sources:
        if os.path.exists(path):
            for key, qs in rows(path).items():
                if keep(key):
                    stages[key] = qs
    out = ["| embedder | mode | rerank | n | frac@10 | frac@30 | nDCG@10 | search ms p50 | rerank ms p50 |",
           "|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(stages):
        s = summarise([QuestionResult.from_json(x) for x in stages[key].values()])
        out.append(f"| {key[0]} | {key[1]} | {key[2]} | {s['n']} | {fmt(s['frac@10'])} | {fmt(s['frac@30'])} | "
                   f"{fmt(s['ndcg@10'])} | {s['search_ms_p50']:.0f} | {fmt(s.get('rerank_ms_p50'))} |")
    return "\n".join(out)


if __name__ == "__main__":
    print(); print(embedder_table())
