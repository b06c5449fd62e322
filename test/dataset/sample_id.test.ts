import * as assert from "uvu/assert";
import { test } from "../_support/harness.ts";
import { SAMPLE_NAMESPACE, sampleId, uuidv5 } from "../../src/dataset/sample_id.ts";

test("uuidv5 matches RFC 9562's example (DNS namespace, www.example.com)", () => {
  assert.is(uuidv5("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "www.example.com"), "2ed6657d-e927-568b-95e1-2665a8aea6a2");
});

test("the cassette namespace is the UUIDv5 of its URL, as the README says", () => {
  assert.is(uuidv5("6ba7b811-9dad-11d1-80b4-00c04fd430c8", "https://github.com/cassette-loader/cassette#sample-id"), SAMPLE_NAMESPACE);
});

test("sampleId is deterministic, differs by dataset and key, and rejects bad names", () => {
  assert.is(sampleId("fashion-mnist", "train/0"), uuidv5(SAMPLE_NAMESPACE, "fashion-mnist/train/0"));
  assert.is.not(sampleId("a", "k"), sampleId("b", "k"));
  assert.is.not(sampleId("a", "k1"), sampleId("a", "k2"));
  assert.throws(() => sampleId("", "k"), /dataset name/);
  assert.throws(() => sampleId("a/b", "k"), /without '\/'/);
  assert.throws(() => sampleId("a", ""), /key is empty/);
});
