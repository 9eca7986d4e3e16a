import { availableParallelism, cpus, loadavg } from "node:os";

/** One line describing the conditions of a run, printed with every benchmark's figures. */
export function machineLine(): string {
  const cores = availableParallelism();
  const [one, five] = loadavg();
  const model = cpus()[0]?.model?.trim() ?? "unknown CPU";
  return `node ${process.version}, ${cores} CPUs (${model}), load average ${one!.toFixed(2)} (1 min) ${five!.toFixed(2)} (5 min)`;
}

/** A warning when the machine is busier than its CPU count: absolute figures are then inflated and noisy. */
export function busyWarning(): string | undefined {
  const cores = availableParallelism();
  const [one] = loadavg();
  return one! > cores
    ? `warning: load average ${one!.toFixed(1)} exceeds ${cores} CPUs; other work competes with the benchmark, so absolute figures are inflated and noisy (ratios are the robust figure).`
    : undefined;
}
