import { bench, describe } from "vitest";

// As short as Tinybench allows: a few milliseconds and iterations each.
const quick = { time: 10, iterations: 5, warmupTime: 0, warmupIterations: 1 };

describe("math", () => {
  bench("add", () => {
    let sum = 0;
    for (let i = 0; i < 100; i++) sum += i;
    return sum;
  }, quick);
  bench("sort", () => [3, 1, 2].sort(), quick);
});

bench("top level", () => Math.sqrt(2), quick);
