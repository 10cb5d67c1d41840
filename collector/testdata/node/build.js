// A pretend build in Node.js, instrumented with OpenTelemetry and sending
// its spans as OTLP/HTTP to the URL in OTLP_URL (a Collector running the
// records exporter). It prints its pid, then builds:
//
//   build                       (a span that says nothing of records)
//     resolve                   records.kind=marks
//       lookup lib              records.kind=cache, observed
//     compile                   records.kind=marks
//       compile app             records.kind=artifact, changed when RUN=changed
//
// RUN=warm finds everything cached: nothing changes. SPLIT=1 exports the
// children in an earlier batch than their parents, a second before them.
'use strict';

const { trace, context } = require('@opentelemetry/api');
const { NodeTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-node');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http');
const { resourceFromAttributes, detectResources, processDetector, hostDetector, osDetector } = require('@opentelemetry/resources');

const changed = process.env.RUN === 'changed';
const split = process.env.SPLIT === '1';

async function main() {
  const detected = detectResources({ detectors: [processDetector, hostDetector, osDetector] });
  if (detected.waitForAsyncAttributes) await detected.waitForAsyncAttributes();
  const resource = resourceFromAttributes({ 'service.name': 'node-build', 'service.version': '1.0.0' }).merge(detected);
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: process.env.OTLP_URL }), { scheduledDelayMillis: 50 })],
  });
  provider.register();
  const tracer = trace.getTracer('build', '1.0.0');
  console.log(JSON.stringify({ pid: process.pid }));

  const root = tracer.startSpan('build');
  const inRoot = trace.setSpan(context.active(), root);

  const resolve = tracer.startSpan('resolve', { attributes: { 'records.kind': 'marks' } }, inRoot);
  const lookup = tracer.startSpan('lookup lib', { attributes: { 'records.kind': 'cache', 'records.effect': 'observed', key: 'lib@1' } }, trace.setSpan(inRoot, resolve));
  lookup.end();
  resolve.end();

  const compile = tracer.startSpan('compile', { attributes: { 'records.kind': 'marks' } }, inRoot);
  const app = tracer.startSpan('compile app', {
    attributes: { 'records.kind': 'artifact', 'records.effect': changed ? 'changed' : 'observed', target: 'app', inputs: ['a.ts', 'b.ts'] },
  }, trace.setSpan(inRoot, compile));
  app.addEvent('tsc done', { files: 2 });
  app.end();
  compile.end();

  if (split) {
    // The children go now, in a batch of their own; the root a second
    // later, in another.
    await provider.forceFlush();
    await new Promise((r) => setTimeout(r, 1000));
  }
  root.end();
  await provider.shutdown();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
