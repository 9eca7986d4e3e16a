/** The Porter2 stemmer file shipped inside wink-eng-lite-web-model (CommonJS, no types of its own). */
declare module "wink-eng-lite-web-model/dist/porter-stemmer.js" {
  /** The word's Porter2 stem, lower-cased ("synthesizing" → "synthes"). */
  const stem: (word: string) => string;
  export default stem;
}
