// Log a run to a tracker server: TRACKER_URL and TRACKER_API_KEY in the environment.
//   TRACKER_URL=https://lab:8443 TRACKER_API_KEY=trk_... node examples/log.mjs
// Prints the new run's id.
import { init } from "../index.js";

const run = await init({
  project: process.env.TRACKER_PROJECT ?? "js-example",
  name: "js-example",
  config: { lr: 0.01, layers: 3 },
  tags: ["js"],
  batchSize: 4,
});
for (let step = 0; step < 10; step++) {
  run.log({ loss: 1 / (step + 1), acc: step / 10 }, { step });
}
await run.finish();
console.log(run.id);
