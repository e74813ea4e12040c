// The TypeScript SDK's SEP-2640 server (@modelcontextprotocol/server ext/skills) over a
// skills directory, on stdio: a third-party server for `skillward check`'s tests.
//   node ts_skills_server.mjs DIR
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';

const [dir] = process.argv.slice(2);
const skills = await loadSkills(dir, { onWarning: (w) => console.error('skill warning:', w) });
serveStdio(() => {
    const server = new McpServer({ name: 'ts-skills', version: '0.1.0' }, { instructions: 'TS SDK skills server.' });
    skills.attach(server);
    return server;
});
