import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The generated-input projects first, then the isolated files, then the rest. */
const rank = (project: string) => (project.endsWith('-fuzz') ? 0 : project.endsWith('-isolated') ? 1 : 2);

/**
 * Vitest's order (project by project; within one, the longest files of the last run first, or the
 * largest), with the generated-input tests moved to the front: they are the longest files, and
 * started last they would leave one worker running alone at the end of the run. A project's files
 * stay together, so that a worker goes on with the modules it has loaded (isolate: false).
 */
export class FuzzFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return sorted
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => rank(a.spec.project.name) - rank(b.spec.project.name) || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
