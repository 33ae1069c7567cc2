"""Embedding throughput: mnemic's numpy MiniLM beside sentence-transformers (torch CPU) and Chroma's ONNX.

    python bench/bench_embeddings.py --reference-python /tmp/torchvenv/bin/python

The torch side runs as a subprocess of another interpreter (torch is never a mnemic dependency);
it loads the same verified weights directory mnemic found. All three see the same deterministic
10–30-word sentences. Figures are medians over --repeats runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

_WORDS = (
    "the a my our their user agent memory prefers likes dislikes meeting project deadline report "
    "team manager coffee tea breakfast lunch dinner morning evening weekend monday friday travel "
    "flight hotel paris london tokyo berlin train station airport book novel music guitar piano "
    "lesson doctor appointment birthday party sister brother mother father friend dog cat garden "
    "kitchen recipe vegetarian allergic peanuts running marathon training gym yoga swimming budget "
    "invoice contract customer support ticket password account email phone address moved new old "
    "quickly slowly always never usually often yesterday tomorrow last next week month year after "
    "before during because although and or but with without about from into over under between "
    "works lives studies bought sold visited forgot remembered asked said wants needs plans booked"
)
_VOCAB = _WORDS.split()


def make_sentences(count: int, seed: int = 1234) -> list[str]:
    rng = random.Random(seed)
    sentences = []
    for _ in range(count):
        words = [rng.choice(_VOCAB) for _ in range(rng.randint(10, 30))]
        sentences.append(" ".join(words).capitalize() + ".")
    return sentences


def measure(
    embed: Callable[[list[str]], object], sentences: Sequence[str], batch: int, repeats: int
) -> tuple[float, float]:
    """Median embeddings per wall second and per CPU second, in consecutive batches of `batch`.

    The CPU-second figure is the fairer comparison on a shared machine: other processes
    stealing cores lower wall throughput but barely change the work each embedding costs.
    """
    embed(list(sentences[:batch]))  # warm-up: lazy loading and allocator growth are not throughput
    rates, cpu_rates = [], []
    for _ in range(repeats):
        start, cpu_start = time.perf_counter(), time.process_time()
        for i in range(0, len(sentences), batch):
            embed(list(sentences[i : i + batch]))
        rates.append(len(sentences) / (time.perf_counter() - start))
        cpu_rates.append(len(sentences) / max(time.process_time() - cpu_start, 1e-9))
    return statistics.median(rates), statistics.median(cpu_rates)


def run_all(embed: Callable[[list[str]], object], args: argparse.Namespace) -> dict[str, float]:
    one, one_cpu = measure(embed, make_sentences(args.n1, seed=11), 1, args.repeats)
    many, many_cpu = measure(embed, make_sentences(args.n32, seed=32), 32, args.repeats)
    return {"1": one, "32": many, "1cpu": one_cpu, "32cpu": many_cpu}


def torch_worker(args: argparse.Namespace) -> None:
    """Runs inside the reference interpreter: only sentence-transformers, no mnemic import."""
    start = time.perf_counter()
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(args.model_dir, device="cpu")
    load_s = time.perf_counter() - start
    import torch

    def embed(texts: list[str]) -> object:
        return model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)

    result: dict[str, object] = dict(run_all(embed, args))
    result.update(load_s=load_s, torch=torch.__version__, threads=torch.get_num_threads())
    print("RESULT " + json.dumps(result))


def run_torch(python: str, model_dir: Path, args: argparse.Namespace) -> dict[str, object] | str:
    command = [
        python, str(Path(__file__).resolve()), "--worker", "torch", "--model-dir", str(model_dir),
        "--repeats", str(args.repeats), "--n1", str(args.n1), "--n32", str(args.n32),
    ]  # fmt: skip
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            parsed: dict[str, object] = json.loads(line[len("RESULT ") :])
            return parsed
    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
    return "not available (" + " | ".join(tail) + ")"


def reference_python(args: argparse.Namespace) -> str | None:
    if args.reference_python:
        return str(args.reference_python)
    try:
        import importlib.util

        if importlib.util.find_spec("sentence_transformers") is not None:
            return sys.executable
    except (ImportError, ValueError):
        pass
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference-python", help="interpreter with torch + sentence-transformers")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n1", type=int, default=64, help="sentences embedded one at a time per repeat")
    parser.add_argument("--n32", type=int, default=256, help="sentences embedded in batches of 32 per repeat")
    parser.add_argument("--workers", type=int, default=None, help="mnemic MiniLM worker threads")
    parser.add_argument("--worker", choices=["torch"], help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "torch":
        torch_worker(args)
        return

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from mnemic.core.embeddings import MiniLM, find_weights
    from mnemic.core.embeddings.adapters import ChromaEmbedder, onnx_model_cached

    model_dir = find_weights()
    load = getattr(os, "getloadavg", lambda: (float("nan"),) * 3)()
    print(f"cpus {os.cpu_count()}, load average before start {load[0]:.2f}; weights {model_dir}")
    print(f"repeats {args.repeats}; batch 1 over {args.n1} sentences, batch 32 over {args.n32}; 10–30 words\n")

    rows: dict[str, dict[str, float] | str] = {}
    start = time.perf_counter()
    minilm = MiniLM(model_dir, batch_size=32, workers=args.workers)
    minilm.load()
    mnemic_load = time.perf_counter() - start
    rows[f"mnemic MiniLM numpy ({minilm.workers} workers)"] = run_all(minilm.embed, args)
    minilm.close()

    python = reference_python(args)
    torch_label = "sentence-transformers torch CPU"
    torch_result: dict[str, object] | str = (
        run_torch(python, model_dir, args) if python else "not available (no --reference-python)"
    )
    if isinstance(torch_result, dict):
        torch_label += f" ({torch_result['torch']}, {torch_result['threads']} threads)"
        rows[torch_label] = {k: float(str(torch_result[k])) for k in ("1", "32", "1cpu", "32cpu")}
    else:
        rows[torch_label] = torch_result

    onnx_label = "Chroma ONNXMiniLM_L6_V2"
    if onnx_model_cached():
        onnx = ChromaEmbedder.onnx_default()
        rows[onnx_label] = run_all(onnx.embed, args)
    else:
        rows[onnx_label] = "not available (model not cached under ~/.cache/chroma/onnx_models)"

    width = max(len(k) for k in rows) + 2
    print(f"{'':<{width}}{'emb/s (wall)':>28}{'emb per CPU-second':>26}")
    print(f"{'backend':<{width}}{'batch 1':>14}{'batch 32':>14}{'batch 1':>13}{'batch 32':>13}")
    for label, value in rows.items():
        if isinstance(value, str):
            print(f"{label:<{width}}  {value}")
        else:
            print(
                f"{label:<{width}}{value['1']:>14.1f}{value['32']:>14.1f}{value['1cpu']:>13.1f}{value['32cpu']:>13.1f}"
            )
    mnemic_rates = next(iter(rows.values()))
    assert isinstance(mnemic_rates, dict)
    if isinstance(torch_result, dict):
        ratios = ", ".join(
            f"{name}: {mnemic_rates[b] / float(str(torch_result[b])):.2f}x"
            for name, b in (("batch 1", "1"), ("batch 32", "32"), ("per CPU-second batch 32", "32cpu"))
        )
        print(f"\nmnemic/torch {ratios}")
        torch_load = float(str(torch_result["load_s"]))
        print(f"start-up: mnemic {mnemic_load:.2f} s, sentence-transformers {torch_load:.2f} s")
    else:
        print(f"\nstart-up: mnemic {mnemic_load:.2f} s")
    load = getattr(os, "getloadavg", lambda: (float("nan"),) * 3)()
    print(f"load average after run {load[0]:.2f} (other processes skew wall figures)")


if __name__ == "__main__":
    main()
