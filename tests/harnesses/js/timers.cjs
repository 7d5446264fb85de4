// console.time / console.timeEnd: Node prints "<label>: <n>ms" for each timer.
function work(n) {
  let total = 0;
  for (let i = 0; i < n; i++) total += Math.sqrt(i);
  return total;
}

console.log("starting");
console.time("sum 10k");
work(10_000);
console.timeEnd("sum 10k");
console.time("label: with colon");
work(100_000);
console.timeEnd("label: with colon");
console.log("done");
