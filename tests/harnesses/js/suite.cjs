// Benchmark.js: a tiny suite, as short as Benchmark.js allows, printing one line per benchmark.
const Benchmark = require("benchmark");

const quick = { maxTime: 0.05, minSamples: 5, minTime: 0.005, initCount: 1 };

new Benchmark.Suite()
  .add("fib(10)", () => {
    let [a, b] = [0, 1];
    for (let i = 0; i < 10; i++) [a, b] = [b, a + b];
    return a;
  }, quick)
  .add("sort x 3 items", () => [3, 1, 2].sort(), quick)
  .on("cycle", (event) => console.log(String(event.target)))
  .on("complete", function () {
    // What the adapter must skip, and the figures the test checks it against.
    console.log(`Fastest is ${this.filter("fastest").map("name")}`);
    const figures = this.map((bench) => ({ name: bench.name, hz: bench.hz, rme: bench.stats.rme }));
    console.error(JSON.stringify(figures));
  })
  .run({ async: false });
