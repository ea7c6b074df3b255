// No import circles in src/: every module's imports point one way (run → process → terminator ...).
// Type-only imports count too: `import type` hides a circle from the emitted JavaScript, not
// from the reader. The imports are read by TypeScript's own scanner (ts.preProcessFile).
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, it } from "node:test";

import ts from "typescript";

// Compiled to dist/test/: the sources are two levels up.
const SRC = resolve(__dirname, "..", "..", "src");

/** Module name (file name less `.ts`) → the modules of the same folder it imports. */
function importGraph(sources: ReadonlyMap<string, string>): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const [name, text] of sources) {
    const edges = new Set<string>();
    // readImportFiles and detectJavaScriptImports: `import`, `import type`, `export ... from`, `import()`, `require()`.
    for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
      const match = /^\.\/([^/]+?)(\.js|\.ts)?$/.exec(fileName);
      if (match !== null && sources.has(match[1]!) && match[1] !== name) {
        edges.add(match[1]!);
      }
    }
    graph.set(name, edges);
  }
  return graph;
}

/** One import circle, as the path a → b → ... → a, or undefined when there is none. */
function findCircle(graph: ReadonlyMap<string, ReadonlySet<string>>): string[] | undefined {
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    const at = path.indexOf(node);
    if (at >= 0) {
      return [...path.slice(at), node];
    }
    if (done.has(node)) {
      return undefined;
    }
    path.push(node);
    for (const next of [...(graph.get(node) ?? [])].sort()) {
      const circle = visit(next);
      if (circle !== undefined) {
        return circle;
      }
    }
    path.pop();
    done.add(node);
    return undefined;
  };
  for (const node of [...graph.keys()].sort()) {
    const circle = visit(node);
    if (circle !== undefined) {
      return circle;
    }
  }
  return undefined;
}

describe("module imports", () => {
  it("form no circle in src/", () => {
    const sources = new Map<string, string>();
    for (const file of readdirSync(SRC).filter((name) => name.endsWith(".ts")).sort()) {
      sources.set(file.slice(0, -3), readFileSync(join(SRC, file), "utf8"));
    }
    assert.ok(sources.has("run") && sources.has("process"), `unexpected sources in ${SRC}: ${[...sources.keys()]}`);
    const graph = importGraph(sources);
    assert.ok(graph.get("run")!.has("process"), "the run starts managed processes: run → process");
    const circle = findCircle(graph);
    assert.equal(circle, undefined, `import circle: ${circle?.join(" → ")} (move the shared piece to a lower module)`);
  });

  it("counts type-only and re-exporting imports", () => {
    const sources = new Map([
      ["a", 'import { b } from "./b";\n'],
      ["b", 'export { c } from "./c";\n'],
      ["c", 'import type { A } from "./a";\nimport { x } from "../gen/x";\n'],
      ["d", 'import { a } from "./a";\n'],
    ]);
    assert.deepEqual(findCircle(importGraph(sources)), ["a", "b", "c", "a"]);
    sources.set("c", 'import { readFileSync } from "node:fs";\n');
    assert.equal(findCircle(importGraph(sources)), undefined);
  });
});
