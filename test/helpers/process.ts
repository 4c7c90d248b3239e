import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const root = new URL('../..', import.meta.url).pathname;

export type Running = { pid: number; lines: string[]; stderr: () => string; waitFor(pattern: RegExp): Promise<Record<string, unknown>>; exit: Promise<number | null>; kill(signal: NodeJS.Signals): void };

export const fromSource = ['--import', 'tsx', 'src/main.ts'];

/**
 * The arguments after `node` of the image's CMD, as the Dockerfile writes them (its V8 flags and
 * the entry point), so that tests and the bench run what the image runs.
 */
export function imageCommand(): string[] {
  const dockerfile = readFileSync(`${root}/Dockerfile`, 'utf8');
  // The image's own CMD starts its line; the HEALTHCHECK's is indented.
  const cmd = /^CMD (\[.*\])$/m.exec(dockerfile);
  const [command, ...args] = JSON.parse(cmd![1]!) as string[];
  if (command !== 'node') throw new Error(`the image's CMD runs ${command}, not node`);
  return args;
}

/** Runs the service as its own process, as `npm start` does, with only the given environment. */
export function runMain(env: Record<string, string>, args: string[] = [], entry = fromSource, cwd = root): Running {
  return run(process.execPath, [...entry, ...args], env, cwd);
}

/** Runs `node args` in `cwd` as another (unprivileged) user, as a container does; needs root. */
export function runMainAs(user: { uid: number; gid: number }, env: Record<string, string>, args: string[], cwd: string): Running {
  // No coverage from a process that may not write to the coverage directory.
  return run(process.execPath, args, { NODE_V8_COVERAGE: '', ...env }, cwd, user);
}

/** Runs `npm start` itself, as a developer, an IDE or a supervisor does; `pid` is npm's. */
export function runNpmStart(env: Record<string, string>): Running {
  return run('npm', ['start', '--silent'], { HOME: process.env.HOME ?? '', ...env }, root);
}

function run(command: string, args: string[], env: Record<string, string>, cwd: string, user: { uid: number; gid: number } | {} = {}): Running {
  const child = spawn(command, args, {
    cwd,
    ...user,
    env: { PATH: process.env.PATH ?? '', NODE_V8_COVERAGE: process.env.NODE_V8_COVERAGE ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  const waiters = new Set<() => void>();
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    lines.push(...parts);
    for (const wake of waiters) wake();
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    pid: child.pid ?? 0,
    lines,
    stderr: () => stderr,
    exit,
    kill: (signal) => child.kill(signal),
    waitFor(pattern) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = lines.find((candidate) => pattern.test(candidate));
          if (line === undefined) return;
          waiters.delete(check);
          resolve(JSON.parse(line) as Record<string, unknown>);
        };
        waiters.add(check);
        void exit.then(() => reject(new Error(`exited before ${pattern}: ${stderr}${lines.join('\n')}`)));
        check();
      });
    },
  };
}


/** Runs `command args` in `cwd` with only PATH (and the environment given) to its end; for documented recipes. */
export function runToEnd(command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(command, args, { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** Runs `node args` (this Node) in `cwd` to its end. */
export function runNode(args: string[], cwd: string, env: Record<string, string> = {}): ReturnType<typeof runToEnd> {
  return runToEnd(process.execPath, args, cwd, env);
}
