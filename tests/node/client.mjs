#!/usr/bin/env node
// A client of mfscore's cluster in another language: Node.js, built at run time from the .proto files alone
// (@grpc/grpc-js and @grpc/proto-loader from npm; docs/distributed.md "Another language"). It imports nothing of
// mfscore and reads nothing of it but proto/ and the published options schemas (mfscore/formats/schemas/), and
// drives a run through AggregatorService as any other system would:
//
//   CreateRun; UploadInputs (each file declared with its name, size and SHA-256 computed here, then its bytes in
//   chunks of at most 256 KiB); SubmitRun (RunSpec.options: the task's options as a JSON object, checked here
//   against the task's published JSON Schema first); WatchRun until the run ends; GetResults (typed messages);
//   FetchReport (the manifest, then each file's chunks, every file checked against the manifest's size and SHA-256
//   before anything is written); ListRuns page by page. With a dataset (DatasetService, docs/datasets.md) it first
//   registers the run's reference files as one (DeclareDatasetFiles, UploadObjects for what the caller lacks,
//   CreateDataset; again, which uploads nothing; GetDataset, ListDatasets, ListDatasetFiles), creates the run
//   naming it, declares the run's files (DeclareInputs) and uploads only those the cluster says are missing.
//
// Usage: node tests/node/client.mjs --cluster CLUSTER.json --run RUN.json --out DIR [--summary SUMMARY.json]
//                                   [--page-size N]
//
// CLUSTER.json: what 'mfscore local-cluster up' or 'mfscore local-cluster token --out' writes; this client reads
// aggregator_address, token and tls_ca (a PEM file; empty: plaintext).
// RUN.json: {"task", "options" (a JSON object), "tables" (keys), "output_name", "files": [{"path", "key"}],
// optionally "dataset": {"name", "version", "root"} (the files whose keys are under "<root>/" make the dataset)}.
// Which files a run reads is the task's planning (MediScore's rules), not the wire protocol's: the caller says.
//
// It writes the report files into DIR and, with --summary, a JSON summary: the run's id, the states it went
// through, its final status, its results (GetResults, in proto3's JSON mapping with the .proto's field names), the
// report's manifest and the runs ListRuns listed. Exit status 0 when the run is DONE and everything checked out;
// 1 otherwise, with one line on stderr saying why.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

const REPOSITORY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PROTO_ROOT = path.join(REPOSITORY, 'proto');
const SCHEMAS = path.join(REPOSITORY, 'mfscore', 'formats', 'schemas');
const CHUNK_BYTES = 256 * 1024; // UploadInputsRequest.chunk: at most 256 KiB a message
const FINAL = new Set(['RUN_STATE_DONE', 'RUN_STATE_REJECTED', 'RUN_STATE_FAILED', 'RUN_STATE_CANCELLED']);

class ClientError extends Error {}

function fail(message) {
  throw new ClientError(message);
}

function say(line) {
  process.stderr.write(`client.mjs: ${line}\n`);
}

// ------------------------------------------------------------------------------------------ the API, from proto/

// Every .proto of the package, so that a service added later (DatasetService) is there without a change here.
// google/protobuf/timestamp.proto is one of the well-known types protobufjs bundles (proto-loader's dependency):
// it resolves without a file, so includeDirs names proto/ alone.
function loadApi() {
  const directory = path.join(PROTO_ROOT, 'mfscore', 'v1');
  const files = fs.readdirSync(directory).filter((name) => name.endsWith('.proto')).sort()
    .map((name) => `mfscore/v1/${name}`);
  const definition = protoLoader.loadSync(files, {
    includeDirs: [PROTO_ROOT],
    keepCase: true, // the .proto's field names (run_id), as proto3's JSON mapping also accepts
    longs: Number, // int64 counts and sizes: well below 2^53
    enums: String, // RUN_STATE_DONE, BETTER_HIGHER
    defaults: true, // scalars at their defaults are present; unset messages are null, unset oneof/optional absent
    oneofs: false,
  });
  return grpc.loadPackageDefinition(definition).mfscore.v1;
}

function connect(api, cluster) {
  if (!cluster.aggregator_address) fail('the cluster file names no aggregator_address');
  if (!cluster.token) fail('the cluster file holds no token: every call needs one');
  const credentials = cluster.tls_ca
    ? grpc.credentials.createSsl(fs.readFileSync(cluster.tls_ca))
    : grpc.credentials.createInsecure();
  // gRPC's default message limits (4 MiB received): report files come in chunks, so nothing here needs more. The
  // aggregator serves DatasetService too, where the .proto files have it.
  const client = new api.AggregatorService(cluster.aggregator_address, credentials);
  const clients = [client];
  if (api.DatasetService) clients.push(new api.DatasetService(cluster.aggregator_address, credentials));
  return { client, clients, token: cluster.token };
}

// Every call carries the caller's bearer token (docs/distributed.md "Credentials"): authorization: Bearer <token>.
function metadata(connection) {
  const m = new grpc.Metadata();
  m.set('authorization', `Bearer ${connection.token}`);
  return m;
}

function deadline(seconds) {
  return new Date(Date.now() + seconds * 1000);
}

function unary(connection, method, request, seconds = 60) {
  const client = connection.clients.find((c) => typeof c[method] === 'function') ?? fail(`no service has ${method}`);
  return new Promise((resolve, reject) => {
    client[method](request, metadata(connection), { deadline: deadline(seconds) }, (error, reply) => {
      if (error) reject(rpcError(method, error));
      else resolve(reply);
    });
  });
}

function rpcError(method, error) {
  const code = Object.keys(grpc.status).find((name) => grpc.status[name] === error.code) ?? error.code;
  return new ClientError(`${method} failed: ${code}: ${error.details || error.message}`);
}

// ------------------------------------------------------------------------------------------------- options

// mfscore's canonical JSON: keys sorted, no spaces. SubmitRun takes any JSON object of the right fields; sorted
// keys only make the same options the same bytes.
function canonicalJson(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) fail(`an option value ${value} is not JSON`);
  return JSON.stringify(value);
}

// The part of JSON Schema 2020-12 the published options schemas use: type, enum, const, bounds, multipleOf,
// items, properties/required/additionalProperties, anyOf, allOf, not. Problems, each naming the field.
function problems(schema, value, where = '') {
  const found = [];
  const name = where || 'the options';
  if (schema.type !== undefined && !typeMatches(schema.type, value)) {
    return [`${name}: ${JSON.stringify(value)} is not of type ${schema.type}`];
  }
  if (schema.enum && !schema.enum.some((choice) => sameJson(choice, value))) {
    found.push(`${name}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  }
  if ('const' in schema && !sameJson(schema.const, value)) found.push(`${name}: ${JSON.stringify(value)} is not ${JSON.stringify(schema.const)}`);
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) found.push(`${name}: ${value} < ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) found.push(`${name}: ${value} > ${schema.maximum}`);
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) found.push(`${name}: ${value} <= ${schema.exclusiveMinimum}`);
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) found.push(`${name}: ${value} >= ${schema.exclusiveMaximum}`);
    if (schema.multipleOf !== undefined && !Number.isInteger(value / schema.multipleOf)) found.push(`${name}: ${value} is not a multiple of ${schema.multipleOf}`);
  }
  if (Array.isArray(value) && schema.items) {
    value.forEach((item, i) => found.push(...problems(schema.items, item, `${name}[${i}]`)));
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const field of schema.required ?? []) {
      if (!(field in value)) found.push(`${where ? `${where}.` : ''}${field}: missing`);
    }
    for (const [field, item] of Object.entries(value)) {
      const inner = where ? `${where}.${field}` : field;
      if (schema.properties && field in schema.properties) found.push(...problems(schema.properties[field], item, inner));
      else if (schema.additionalProperties === false) found.push(`${inner}: there is no such option`);
    }
  }
  if (schema.allOf) schema.allOf.forEach((part) => found.push(...problems(part, value, where)));
  if (schema.anyOf && !schema.anyOf.some((part) => problems(part, value, where).length === 0)) {
    found.push(`${name}: ${JSON.stringify(value)} matches none of its allowed forms`);
  }
  if (schema.not && problems(schema.not, value, where).length === 0) found.push(`${name}: ${JSON.stringify(value)} is refused`);
  return found;
}

function typeMatches(type, value) {
  if (Array.isArray(type)) return type.some((t) => typeMatches(t, value));
  switch (type) {
    case 'null': return value === null;
    case 'boolean': return typeof value === 'boolean';
    case 'integer': return Number.isInteger(value);
    case 'number': return typeof value === 'number';
    case 'string': return typeof value === 'string';
    case 'array': return Array.isArray(value);
    case 'object': return value !== null && typeof value === 'object' && !Array.isArray(value);
    default: return false;
  }
}

function sameJson(a, b) {
  return canonicalJson(a) === canonicalJson(b);
}

// The task's options as RunSpec.options: checked against the task's published schema when there is one.
function optionsBytes(task, options) {
  const file = path.join(SCHEMAS, `options-${task}.json`);
  if (fs.existsSync(file)) {
    const found = problems(JSON.parse(fs.readFileSync(file, 'utf8')), options);
    if (found.length) fail(`the options do not follow ${path.relative(REPOSITORY, file)}: ${found.join('; ')}`);
    say(`options checked against ${path.relative(REPOSITORY, file)}`);
  } else {
    say(`no published options schema for ${task} (${path.relative(REPOSITORY, file)}): sending the options unchecked`);
  }
  return Buffer.from(canonicalJson(options), 'utf8');
}

// --------------------------------------------------------------------------------------------------- upload

function declare(file) {
  const digest = crypto.createHash('sha256');
  let size = 0;
  const fd = fs.openSync(file.path, 'r');
  try {
    const buffer = Buffer.alloc(1 << 20);
    for (let n; (n = fs.readSync(fd, buffer, 0, buffer.length, null)) > 0;) {
      digest.update(buffer.subarray(0, n));
      size += n;
    }
  } finally {
    fs.closeSync(fd);
  }
  return { name: file.key, size, sha256: digest.digest('hex') };
}

// A client stream of files: `first` (if any), then each file's declaration and its bytes in chunks of at most
// 256 KiB, waiting for the stream to drain (gRPC's flow control) rather than buffering a whole file. The answer
// must list the files stored as they were declared.
async function streamFiles(connection, method, first, files, declarations) {
  let finish;
  const answered = new Promise((resolve, reject) => {
    finish = { resolve, reject };
  });
  const client = connection.clients.find((c) => typeof c[method] === 'function') ?? fail(`no service has ${method}`);
  const call = client[method](metadata(connection), { deadline: deadline(3600) }, (error, reply) => {
    if (error) finish.reject(rpcError(method, error));
    else finish.resolve(reply);
  });
  const send = async (message) => {
    if (!call.write(message)) await new Promise((resolve) => call.once('drain', resolve));
  };
  let chunks = 0;
  try {
    if (first) await send(first);
    for (const [i, file] of files.entries()) {
      await send({ file: declarations[i] });
      const stream = fs.createReadStream(file.path, { highWaterMark: CHUNK_BYTES });
      let sent = 0;
      for await (const chunk of stream) {
        if (chunk.length > CHUNK_BYTES) fail(`a chunk of ${chunk.length} bytes`); // never: highWaterMark
        await send({ chunk });
        sent += chunk.length;
        chunks += 1;
      }
      if (sent !== declarations[i].size) fail(`${file.path} changed while it was sent`);
    }
  } finally {
    call.end();
  }
  const reply = await answered;
  const stored = reply.files.map((f) => `${f.name} ${f.size} ${f.sha256}`);
  const sent = declarations.map((f) => `${f.name} ${f.size} ${f.sha256}`);
  if (JSON.stringify(stored) !== JSON.stringify(sent)) {
    fail(`${method} stored ${JSON.stringify(stored)}, not what was declared (${JSON.stringify(sent)})`);
  }
  return chunks;
}

// One UploadInputs stream: the run first, then the files (named by their keys in the run).
async function uploadInputs(connection, runId, files, declarations = files.map(declare)) {
  const chunks = await streamFiles(connection, 'UploadInputs', { run_id: runId }, files, declarations);
  return { declared: declarations, chunks };
}

// ---------------------------------------------------------------------------------------------- watch, fetch

async function watchRun(connection, runId) {
  const states = [];
  let last = null;
  const call = connection.client.WatchRun({ run_id: runId }, metadata(connection), { deadline: deadline(1800) });
  try {
    for await (const reply of call) {
      last = reply.run;
      if (states[states.length - 1] !== last.state) {
        states.push(last.state);
        say(`run ${runId}: ${last.state} (${last.trials_received}/${last.trials_planned} trials)`);
      }
      if (FINAL.has(last.state)) break;
    }
  } catch (error) {
    throw rpcError('WatchRun', error);
  } finally {
    call.cancel();
  }
  if (!last || !FINAL.has(last.state)) fail(`WatchRun ended before run ${runId} did`);
  return { states, final: last };
}

// A report file's name must stay inside DIR: relative, '/'-separated plain parts.
function reportPath(directory, name) {
  const parts = name.split('/');
  if (!name || path.isAbsolute(name) || name.includes('\\')
      || parts.some((part) => part === '' || part === '.' || part === '..')) {
    fail(`the aggregator sent a report file named ${JSON.stringify(name)}, outside the output directory`);
  }
  return path.join(directory, ...parts);
}

// FetchReport: the manifest, then each file's bytes in the manifest's order. Files go to a staging directory,
// each checked against its declared size and SHA-256; only when all match do they move into DIR.
async function fetchReport(connection, runId, out) {
  fs.mkdirSync(out, { recursive: true });
  const stage = fs.mkdtempSync(path.join(out, '.fetching-'));
  const call = connection.client.FetchReport({ run_id: runId }, metadata(connection), { deadline: deadline(3600) });
  let manifest = null;
  let index = -1;
  let current = null; // {declared, fd, digest, size}
  let largest = 0;
  const open = () => {
    while (++index < manifest.files.length) {
      const declared = manifest.files[index];
      const target = reportPath(stage, declared.name);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      current = { declared, fd: fs.openSync(target, 'wx'), digest: crypto.createHash('sha256'), size: 0 };
      if (declared.size > 0) return;
      close(); // an empty file has no chunk
    }
    current = null;
  };
  const close = () => {
    fs.closeSync(current.fd);
    const { declared, size } = current;
    const digest = current.digest.digest('hex');
    if (size !== declared.size || digest !== declared.sha256) {
      fail(`the report file ${declared.name} is ${size} bytes with SHA-256 ${digest}, not the manifest's `
        + `${declared.size} bytes with ${declared.sha256}; nothing was written`);
    }
    current = null;
  };
  try {
    try {
      for await (const reply of call) {
        if (manifest === null) {
          if (!reply.manifest) fail(`the report of run ${runId} came without its manifest`);
          manifest = reply.manifest;
          open();
          continue;
        }
        if (reply.manifest) fail(`a second manifest in the report of run ${runId}`);
        const chunk = reply.chunk;
        largest = Math.max(largest, chunk.length);
        if (current === null) fail(`the report of run ${runId} holds more than its manifest declares`);
        if (current.size + chunk.length > current.declared.size) fail(`a chunk runs past the end of ${current.declared.name}`);
        fs.writeSync(current.fd, chunk);
        current.digest.update(chunk);
        current.size += chunk.length;
        if (current.size === current.declared.size) {
          close();
          open();
        }
      }
    } catch (error) {
      if (error instanceof ClientError) throw error;
      throw rpcError('FetchReport', error);
    }
    if (manifest === null) fail(`the report of run ${runId} was empty`);
    if (current !== null) fail(`the report of run ${runId} ended inside ${current.declared.name}; nothing was written`);
    for (const declared of manifest.files) { // every file checked: move them into place
      const target = reportPath(out, declared.name);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.renameSync(reportPath(stage, declared.name), target);
    }
  } finally {
    if (current !== null) fs.closeSync(current.fd);
    call.cancel();
    fs.rmSync(stage, { recursive: true, force: true });
  }
  const stdout = manifest.stdout.map((line) => line.replaceAll('\0output-directory\0', path.join(out, '')));
  return { files: manifest.files, stdout, exit_status: manifest.exit_status, largest_chunk: largest };
}

// Every run the caller may see, ListRuns page after page (oldest created first).
async function listRuns(connection, pageSize) {
  const runs = [];
  let token = '';
  let pages = 0;
  do {
    const page = await unary(connection, 'ListRuns', { page_size: pageSize, page_token: token });
    if (page.runs.length > Math.max(pageSize, 1)) fail(`ListRuns answered ${page.runs.length} runs for a page of ${pageSize}`);
    runs.push(...page.runs.map((run) => ({ run_id: run.run_id, task: run.task, state: run.state })));
    token = page.next_page_token;
    pages += 1;
  } while (token);
  return { pages, runs };
}

// A message as proto3's JSON mapping (the .proto's field names): unset messages (null here) left out.
function protoJson(value) {
  if (Array.isArray(value)) return value.map(protoJson);
  if (Buffer.isBuffer(value)) return value.toString('base64');
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => [k, protoJson(v)]));
  }
  return value;
}

// ------------------------------------------------------------------------------------------------- datasets

// A dataset's manifest digest as DatasetService defines it: the SHA-256 of the lines "<sha256>  <name>\n" of its
// files in name order (sha256sum's format).
function manifestSha256(declarations) {
  const lines = [...declarations].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((f) => `${f.sha256}  ${f.name}\n`).join('');
  return crypto.createHash('sha256').update(lines, 'utf8').digest('hex');
}

// CreateDataset, a client stream: the first message names the dataset; the files follow a batch a message (each
// message well under gRPC's 1 MiB request limit).
function createDataset(connection, dataset, declarations) {
  const client = connection.clients.find((c) => typeof c.CreateDataset === 'function');
  return new Promise((resolve, reject) => {
    const call = client.CreateDataset(metadata(connection), { deadline: deadline(600) }, (error, reply) => {
      if (error) reject(rpcError('CreateDataset', error));
      else resolve(reply);
    });
    const batch = 2000;
    call.write({ name: dataset.name, version: dataset.version, shared: Boolean(dataset.shared),
      files: declarations.slice(0, batch) });
    for (let i = batch; i < declarations.length; i += batch) call.write({ files: declarations.slice(i, i + batch) });
    call.end();
  });
}

async function pages(connection, method, request, field) {
  const items = [];
  let token = '';
  let count = 0;
  do {
    const page = await unary(connection, method, { ...request, page_token: token });
    items.push(...page[field]);
    token = page.next_page_token;
    count += 1;
  } while (token);
  return { items, pages: count };
}

// Register the files of the run under the dataset's root ("ref/": the --refDir tree) as a dataset: declare them,
// upload only what the caller lacks (UploadObjects), create it; then register it again, which must upload nothing
// and change nothing, and read it back (GetDataset, ListDatasets, ListDatasetFiles page by page).
async function registerDataset(connection, run, summary) {
  const dataset = run.dataset;
  const prefix = `${dataset.root}/`;
  const members = run.files.filter((f) => f.key.startsWith(prefix))
    .map((f) => ({ path: f.path, key: f.key.slice(prefix.length) }));
  if (!members.length) fail(`no file of the run is under ${prefix}: nothing to register`);
  const declarations = members.map(declare);
  const digest = manifestSha256(declarations);
  const naming = { name: dataset.name, version: dataset.version, shared: Boolean(dataset.shared) };
  const missing = new Set((await unary(connection, 'DeclareDatasetFiles', { ...naming, files: declarations })).missing);
  const upload = members.map((_, i) => i).filter((i) => missing.has(declarations[i].name));
  const chunks = upload.length ? await streamFiles(connection, 'UploadObjects', null, upload.map((i) => members[i]),
    upload.map((i) => declarations[i])) : 0;
  const made = await createDataset(connection, dataset, declarations);
  if (made.dataset.manifest_sha256 !== digest) {
    fail(`CreateDataset recorded manifest ${made.dataset.manifest_sha256}, not ${digest} as computed here`);
  }
  const ref = `${dataset.name}@${dataset.version}`;
  say(`dataset ${ref} created: ${declarations.length} file(s), ${upload.length} uploaded in ${chunks} chunk(s)`);

  const again = (await unary(connection, 'DeclareDatasetFiles', { ...naming, files: declarations })).missing;
  if (again.length) fail(`registering ${ref} again would upload ${again.length} file(s): ${again.join(', ')}`);
  const remade = await createDataset(connection, dataset, declarations);
  if (remade.created || remade.dataset.manifest_sha256 !== digest) fail(`CreateDataset again changed ${ref}`);

  const got = (await unary(connection, 'GetDataset', { name: dataset.name, version: dataset.version })).dataset;
  const listed = await pages(connection, 'ListDatasets', { page_size: 1 }, 'datasets');
  const files = await pages(connection, 'ListDatasetFiles', { name: dataset.name, version: dataset.version,
    page_size: Math.max(1, Math.ceil(declarations.length / 3)) }, 'files');
  const expected = [...declarations].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (JSON.stringify(files.items.map((f) => [f.name, f.size, f.sha256]))
      !== JSON.stringify(expected.map((f) => [f.name, f.size, f.sha256]))) {
    fail(`ListDatasetFiles does not list the files of ${ref} as declared`);
  }
  if (!listed.items.some((d) => d.name === dataset.name && d.version === dataset.version)) {
    fail(`ListDatasets (${listed.pages} pages) does not list ${ref}`);
  }
  summary.dataset = {
    ref,
    manifest_sha256: digest,
    files: declarations.length,
    uploaded: upload.map((i) => declarations[i].name),
    created: made.created,
    created_again: remade.created,
    got: protoJson(got),
    listed_pages: listed.pages,
    file_pages: files.pages,
  };
  return ref;
}

// ----------------------------------------------------------------------------------------------------- main

function parseArguments(argv) {
  const known = new Set(['--cluster', '--run', '--out', '--summary', '--page-size']);
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!known.has(argv[i]) || i + 1 >= argv.length) {
      fail(`usage: client.mjs --cluster CLUSTER.json --run RUN.json --out DIR [--summary FILE] [--page-size N] `
        + `(not ${JSON.stringify(argv[i])})`);
    }
    args[argv[i].slice(2).replace('-', '_')] = argv[i + 1];
  }
  for (const required of ['cluster', 'run', 'out']) if (!args[required]) fail(`--${required} is required`);
  return args;
}

async function main() {
  const args = parseArguments(process.argv.slice(2));
  const cluster = JSON.parse(fs.readFileSync(args.cluster, 'utf8'));
  const run = JSON.parse(fs.readFileSync(args.run, 'utf8'));
  const pageSize = Number(args.page_size ?? 2);
  const api = loadApi();
  const connection = connect(api, cluster);
  const started = Date.now();
  const elapsed = () => (Date.now() - started) / 1000;

  const options = optionsBytes(run.task, run.options);
  const summary = {};
  let dataset = '';
  if (run.dataset) {
    if (!api.DatasetService) fail('the .proto files have no DatasetService: a run cannot name a dataset');
    dataset = await registerDataset(connection, run, summary);
  }
  const created = await unary(connection, 'CreateRun', dataset ? { dataset } : {});
  const runId = created.run_id;
  say(`run ${runId} created (inputs under ${created.input_prefix})${dataset ? ` against ${dataset}` : ''}`);

  // With a dataset, the files are declared first (DeclareInputs) and only those the cluster lacks are sent.
  const declarations = run.files.map(declare);
  let sending = run.files.map((_, i) => i);
  if (dataset) {
    const missing = new Set((await unary(connection, 'DeclareInputs', { run_id: runId, files: declarations })).missing);
    sending = sending.filter((i) => missing.has(declarations[i].name));
    summary.declared_inputs = declarations.map((f) => f.name);
  }
  const uploaded = await uploadInputs(connection, runId, sending.map((i) => run.files[i]),
    sending.map((i) => declarations[i]));
  const bytes = uploaded.declared.reduce((sum, f) => sum + f.size, 0);
  say(`uploaded ${uploaded.declared.length} of ${run.files.length} file(s), ${bytes} bytes in ${uploaded.chunks} chunk(s)`);

  const spec = {
    task: run.task,
    options,
    tables: run.tables,
    input_prefix: created.input_prefix,
    output_name: run.output_name,
    run_id: runId,
    skip_validation: Boolean(run.skip_validation),
    ...(dataset ? { dataset } : {}),
  };
  const submitted = await unary(connection, 'SubmitRun', { spec });
  say(`run ${runId} submitted: ${submitted.run.state}`);
  const again = await unary(connection, 'SubmitRun', { spec }); // submitting again returns the same run
  if (again.run.run_id !== runId) fail(`SubmitRun again answered run ${again.run.run_id}, not ${runId}`);

  const { states, final } = await watchRun(connection, runId);
  Object.assign(summary, {
    run_id: runId,
    input_prefix: created.input_prefix,
    options_sent: options.toString('utf8'),
    uploaded: uploaded.declared,
    upload_chunks: uploaded.chunks,
    states,
    final: protoJson(final),
  });
  const write = () => {
    if (args.summary) fs.writeFileSync(args.summary, `${JSON.stringify(summary, null, 1)}\n`);
  };
  if (final.state !== 'RUN_STATE_DONE') {
    write();
    const findings = (final.validation?.findings ?? []).map((f) => `${f.severity}: ${f.message}`).join('; ');
    fail(`run ${runId} ended ${final.state}: ${final.message}${findings ? ` (${findings})` : ''}`);
  }

  const results = (await unary(connection, 'GetResults', { run_id: runId })).results;
  summary.results = protoJson(results);
  const primary = results.rows.find((row) => row.query === '') ?? results.rows[0];
  say(`results: ${results.task}, primary ${results.primary} = ${primary?.values?.[results.primary]?.value}`);

  summary.report = await fetchReport(connection, runId, args.out);
  say(`report: ${summary.report.files.length} file(s) checked against the manifest and written to ${args.out}`);

  if (dataset) { // the dataset's leaderboard (docs/results.md "Leaderboards"), which now holds this run
    const board = (await unary(connection, 'GetLeaderboard', { dataset, task: run.task })).leaderboard;
    summary.leaderboard = protoJson(board);
    say(`leaderboard of ${dataset}: ${board.rankings?.[0]?.lines?.length ?? 0} line(s)`);
  }

  summary.listed = await listRuns(connection, pageSize);
  if (!summary.listed.runs.some((listed) => listed.run_id === runId && listed.state === 'RUN_STATE_DONE')) {
    fail(`ListRuns (${summary.listed.pages} pages) does not list run ${runId} as done`);
  }
  say(`ListRuns: ${summary.listed.runs.length} run(s) in ${summary.listed.pages} page(s) of ${pageSize}`);
  summary.seconds = elapsed();
  write();
  connection.clients.forEach((client) => client.close());
}

main().then(() => process.exit(0), (error) => {
  say(`error: ${error instanceof ClientError ? error.message : error.stack}`);
  process.exit(1);
});
