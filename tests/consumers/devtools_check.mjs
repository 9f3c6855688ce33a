#!/usr/bin/env node
// Load a Chrome trace JSON file with Chrome DevTools' Performance-panel trace
// engine (@paulirish/trace_engine, pinned in package.json) the same way the
// panel does when a file is opened, and print ONE JSON object on stdout that
// summarises what the engine built (see README.md for the fields).
//
//   node devtools_check.mjs FILE.json[.gz] [--max-slices N] [--timeout SEC]
//   node devtools_check.mjs --serve [--max-slices N] [--timeout SEC]
//
// Exit 0 and {"ok":true,...} when the engine parsed the trace;
// exit 1 and {"ok":false,"error":"..."} otherwise (bad JSON, wrong shape, an
// exception thrown by the engine, or the timeout); exit 2 on bad usage.
//
// --serve: reads one FILE per line on stdin and prints that object for each,
// one per line, until stdin ends; the engine is loaded once (a test suite
// that checks hundreds of files pays its start once per process).
//
// The parse runs in a worker thread so that a stuck engine can be terminated
// by the timeout, and so that the engine's console output never reaches stdout
// (it is collected into "errors"/"warnings" instead).

import fs from 'node:fs';
import zlib from 'node:zlib';
import {Worker, isMainThread, parentPort, workerData} from 'node:worker_threads';

const ENGINE = '@paulirish/trace_engine';

if (isMainThread) {
  main();
} else if (workerData.serve) {
  parentPort.on('message', opts => runInWorker(opts).then(
      result => parentPort.postMessage(result),
      err => parentPort.postMessage({ok: false, error: errText(err)})));
} else {
  runInWorker(workerData).then(
      result => parentPort.postMessage(result),
      err => parentPort.postMessage({ok: false, error: errText(err)}));
}

function usage(msg) {
  process.stderr.write(
      (msg ? `devtools_check: ${msg}\n` : '') +
      'usage: node devtools_check.mjs FILE.json[.gz] [--max-slices N] [--timeout SEC]\n' +
      '       node devtools_check.mjs --serve [--max-slices N] [--timeout SEC]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {file: null, serve: false, maxSlices: 100000, timeoutSec: 300};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const num = name => {
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      const n = Number(v);
      if (v === undefined || !Number.isFinite(n) || n < 0) {
        usage(`${name} needs a non-negative number`);
      }
      return n;
    };
    if (a === '--max-slices' || a.startsWith('--max-slices=')) {
      opts.maxSlices = Math.floor(num('--max-slices'));
    } else if (a === '--timeout' || a.startsWith('--timeout=')) {
      opts.timeoutSec = num('--timeout');
    } else if (a === '--serve') {
      opts.serve = true;
    } else if (a === '-h' || a === '--help') {
      usage();
    } else if (a.startsWith('--')) {
      usage(`unknown option ${a}`);
    } else if (opts.file === null) {
      opts.file = a;
    } else {
      usage('only one FILE');
    }
  }
  if ((opts.file === null) === !opts.serve) {
    usage(opts.serve ? 'FILE or --serve, not both' : 'missing FILE');
  }
  return opts;
}

function finish(obj) {
  const text = JSON.stringify(obj) + '\n';
  // Write synchronously so nothing is lost when we exit right after.
  fs.writeSync(1, text);
  process.exit(obj.ok ? 0 : 1);
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.serve) {
    serve(opts);
    return;
  }
  let done = false;
  const worker = new Worker(new URL(import.meta.url), {workerData: opts, stdout: true, stderr: true});
  // Drain the worker's own stdio so it can never block or leak onto ours.
  worker.stdout.resume();
  worker.stderr.resume();
  const timer = opts.timeoutSec > 0 ? setTimeout(() => {
    if (done) {
      return;
    }
    done = true;
    void worker.terminate();
    finish({ok: false, error: `timeout: trace engine did not finish within ${opts.timeoutSec}s`});
  }, opts.timeoutSec * 1000) : null;
  worker.on('message', msg => {
    if (done) {
      return;
    }
    done = true;
    if (timer) {
      clearTimeout(timer);
    }
    finish(msg);
  });
  worker.on('error', err => {
    if (done) {
      return;
    }
    done = true;
    finish({ok: false, error: errText(err)});
  });
  worker.on('exit', code => {
    if (done) {
      return;
    }
    done = true;
    finish({ok: false, error: `worker exited (code ${code}) without a result`});
  });
}

// --serve: one worker that keeps the engine loaded, one file at a time; a
// worker that times out or dies is replaced for the next file.
function serve(opts) {
  let worker = null;
  let pending = null;   // {timer}
  const queue = [];
  const reply = obj => {
    if (pending?.timer) {
      clearTimeout(pending.timer);
    }
    pending = null;
    fs.writeSync(1, JSON.stringify(obj) + '\n');
    next();
  };
  const spawn = () => {
    worker = new Worker(new URL(import.meta.url), {workerData: {serve: true}, stdout: true,
                                                    stderr: true});
    worker.stdout.resume();
    worker.stderr.resume();
    worker.on('message', msg => pending && reply(msg));
    worker.on('error', err => {
      worker = null;
      if (pending) {
        reply({ok: false, error: errText(err)});
      }
    });
    worker.on('exit', code => {
      worker = null;
      if (pending) {
        reply({ok: false, error: `worker exited (code ${code}) without a result`});
      }
    });
  };
  const next = () => {
    if (pending || !queue.length) {
      return;
    }
    const file = queue.shift();
    if (!worker) {
      spawn();
    }
    pending = {timer: null};
    if (opts.timeoutSec > 0) {
      pending.timer = setTimeout(() => {
        const w = worker;
        worker = null;
        reply({ok: false, error: `timeout: trace engine did not finish within ${opts.timeoutSec}s`});
        void w?.terminate();
      }, opts.timeoutSec * 1000);
    }
    worker.postMessage({...opts, file});
  };
  let rest = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', chunk => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop();
    queue.push(...lines.filter(l => l.length));
    next();
  });
  process.stdin.on('end', () => {
    const wait = () => (pending || queue.length ? setTimeout(wait, 10) : process.exit(0));
    wait();
  });
}

function errText(e) {
  if (e instanceof Error) {
    return `${e.name}: ${e.message}`;
  }
  return String(e);
}

function fmtArgs(args) {
  return args
      .map(a => {
        if (a instanceof Error) {
          return errText(a);
        }
        if (typeof a === 'string') {
          return a;
        }
        try {
          return JSON.stringify(a);
        } catch {
          return String(a);
        }
      })
      .join(' ');
}

function loadTraceFile(file) {
  const buf = fs.readFileSync(file);
  const gz = buf.length >= 3 && buf[0] === 0x1f && buf[1] === 0x8b && buf[2] === 0x08;
  const text = (gz ? zlib.gunzipSync(buf) : buf).toString('utf8');
  return JSON.parse(text);
}

async function runInWorker(opts) {
  // Same shape handling as DevTools' TimelineLoader#processParsedFile: either
  // a bare array of events, or an object with "traceEvents" (+ "metadata").
  let json;
  try {
    json = loadTraceFile(opts.file);
  } catch (e) {
    return {ok: false, error: `cannot load JSON: ${errText(e)}`};
  }
  let events;
  let metadata = {};
  if (Array.isArray(json)) {
    events = json;
  } else if (json && typeof json === 'object' && 'traceEvents' in json) {
    events = json.traceEvents;
    metadata = json.metadata ?? {};
  } else if (json && typeof json === 'object' && json.nodes) {
    return {ok: false, error: 'file is a raw CPU profile, not a trace (not supported by this checker)'};
  } else {
    return {ok: false, error: 'Malformed timeline data: neither an array nor an object with "traceEvents"'};
  }
  if (!Array.isArray(events)) {
    return {ok: false, error: '"traceEvents" is not an array'};
  }
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) {
    return {ok: false, error: '"metadata" is not an object'};
  }

  // Capture everything the engine logs (e.g. RendererHandler's
  // "Begin/End events mismatch" console.error).
  const errors = [];
  const warnings = [];
  const MAX_MSGS = 1000;
  const push = (list, args) => {
    if (list.length < MAX_MSGS) {
      list.push(fmtArgs(args));
    }
  };
  console.error = (...a) => push(errors, a);
  console.warn = (...a) => push(warnings, a);
  console.log = console.info = console.debug = console.trace = (...a) => push(warnings, a);
  console.assert = (cond, ...a) => {
    if (!cond) {
      push(errors, ['Assertion failed:', ...a]);
    }
  };

  installDOMRectPolyfill();
  const Trace = await import(ENGINE);

  // What the Performance panel does for a loaded file
  // (TimelinePanel#executeNewTrace -> TraceModel.Model#parse).
  const model = Trace.TraceModel.Model.createWithAllHandlers();
  try {
    await model.parse(events, {metadata, isFreshRecording: false});
  } catch (e) {
    return {ok: false, error: `trace engine threw: ${errText(e)}`, errors, warnings};
  }
  const parsed = model.parsedTrace();
  if (!parsed || !parsed.data) {
    return {ok: false, error: 'trace engine produced no data', errors, warnings};
  }
  const data = parsed.data;
  return summarise(Trace, data, events, opts, errors, warnings);
}

function summarise(Trace, data, events, opts, errors, warnings) {
  const meta = data.Meta;

  // Threads exactly as the flame chart gets them (one track per thread).
  const threadList = Trace.Handlers.Threads.threadsInTrace(data);

  const processes = {};
  for (const [pid, ev] of meta.processNames) {
    processes[pid] = ev?.args?.name ?? null;
  }
  for (const t of threadList) {
    if (!(t.pid in processes)) {
      processes[t.pid] = null;
    }
  }

  const threads = [];
  const allSlices = [];
  for (const t of threadList) {
    let count = 0;
    const stack = [...(t.tree?.roots ?? [])].reverse();
    while (stack.length) {
      const node = stack.pop();
      const e = node.entry;
      count++;
      allSlices.push({
        pid: t.pid,
        tid: t.tid,
        name: e.name,
        cat: e.cat ?? null,
        ph: e.ph,
        ts: e.ts,
        dur: e.dur ?? 0,
        depth: node.depth,
      });
      for (let i = node.children.length - 1; i >= 0; i--) {
        stack.push(node.children[i]);
      }
    }
    threads.push({
      pid: t.pid,
      tid: t.tid,
      name: t.name ?? null,
      type: t.type,
      slices: count,
      entries: t.entries.length,
      dropped: t.entries.length - count,
      max_depth: t.tree?.maxDepth ?? 0,
    });
  }
  threads.sort((a, b) => a.pid - b.pid || a.tid - b.tid);
  allSlices.sort((a, b) => a.pid - b.pid || a.tid - b.tid || a.ts - b.ts || a.depth - b.depth);

  const flowsAll = data.Flows?.flows ?? [];
  const flows = flowsAll.slice(0, opts.maxSlices).map(flow => flow.map(e => ({
                                                                          pid: e.pid,
                                                                          tid: e.tid,
                                                                          name: e.name,
                                                                          ts: e.ts,
                                                                        })));

  let counters = 0;
  for (const e of events) {
    if (e && e.ph === 'C') {
      counters++;
    }
  }

  return {
    ok: true,
    engine: `${ENGINE}@${engineVersion()}`,
    trace_is_generic: meta.traceIsGeneric,
    bounds: {min: meta.traceBounds.min, max: meta.traceBounds.max, range: meta.traceBounds.range},
    events: events.length,
    errors,
    warnings,
    processes,
    threads,
    slices_total: allSlices.length,
    slices_truncated: allSlices.length > opts.maxSlices,
    slices: allSlices.slice(0, opts.maxSlices),
    flows_total: flowsAll.length,
    flows,
    counters,
  };
}

function engineVersion() {
  try {
    const p = new URL(`./node_modules/${ENGINE}/package.json`, import.meta.url);
    return JSON.parse(fs.readFileSync(p, 'utf8')).version;
  } catch {
    return 'unknown';
  }
}

// DevTools' trace engine expects window.DOMRect. Minimal stand-in, as the
// package's own analyze-trace.mjs does.
function installDOMRectPolyfill() {
  if (typeof globalThis.DOMRect === 'function') {
    return;
  }
  globalThis.DOMRect = class DOMRect {
    constructor(x = 0, y = 0, width = 0, height = 0) {
      this.x = Number(x);
      this.y = Number(y);
      this.width = Number(width);
      this.height = Number(height);
    }
    get left() {
      return this.x + Math.min(0, this.width);
    }
    get right() {
      return this.x + Math.max(0, this.width);
    }
    get top() {
      return this.y + Math.min(0, this.height);
    }
    get bottom() {
      return this.y + Math.max(0, this.height);
    }
  };
}
