// Projects: their agents with prompt versions and skills with their versions, each with a diff between versions.
import { postV2 } from "../api";
import { Async, useAsync } from "../components/async";
import { Badge } from "../components/badge";
import { Table } from "../components/table";
import { Time } from "../components/time";
import { VersionHistory } from "../components/versions";
import { href } from "../router";
import type { AgentDefinition, DiffResponse, Project, Skill, Version } from "../types";

export function ProjectsPage({ projectId }: { projectId: string }) {
  const projects = useAsync(() => postV2<{ projects: Project[] }>("control/projects/list", { limit: 500 }), []);
  return (
    <section class="page" aria-labelledby="projects-title">
      <header class="page-head">
        <h1 id="projects-title">Projects</h1>
        <p class="muted">Agent prompts and skills are versioned: compare any two versions.</p>
      </header>
      <Async state={projects}>
        {(data) => {
          const selected = data.projects.find((p) => p.project_id === projectId) ?? data.projects[0];
          return (
            <div class="split">
              <nav class="card project-list" aria-label="Project list">
                {data.projects.length === 0 && <p class="muted empty">No project yet.</p>}
                <ul>
                  {data.projects.map((project) => (
                    <li key={project.project_id}>
                      <a
                        href={href("projects", project.project_id)}
                        class={project.project_id === selected?.project_id ? "selected" : ""}
                        aria-current={project.project_id === selected?.project_id ? "page" : undefined}
                      >
                        <strong>{project.name}</strong>
                        <span class="muted small">
                          {project.agent_ids.length} agent{project.agent_ids.length === 1 ? "" : "s"}
                        </span>
                      </a>
                    </li>
                  ))}
                </ul>
              </nav>
              {selected && <ProjectDetail key={selected.project_id} project={selected} />}
            </div>
          );
        }}
      </Async>
    </section>
  );
}

function ProjectDetail({ project }: { project: Project }) {
  const id = project.project_id;
  const agents = useAsync(() => postV2<{ agents: AgentDefinition[] }>("control/projects/agents/list", { project_id: id }), [id]);
  const skills = useAsync(() => postV2<{ skills: Skill[] }>("control/skills/list", { project_id: id }), [id]);
  return (
    <div class="project-detail">
      <article class="card" aria-label="Project">
        <h2>{project.name}</h2>
        {project.description && <p>{project.description}</p>}
        <p class="muted small">
          <span class="mono">{id}</span> · created <Time iso={project.created_at} /> · updated <Time iso={project.updated_at} />
        </p>
      </article>
      <Async state={agents}>
        {(data) => (
          <>
            {data.agents.length === 0 && <p class="muted empty">No agent defined in this project.</p>}
            {data.agents.map((agent) => (
              <article class="card" key={agent.agent_id} aria-label={`Agent ${agent.agent_id}`}>
                <div class="card-head">
                  <h3>
                    Prompt of <span class="mono">{agent.agent_id}</span>
                  </h3>
                  {agent.role && <Badge text={agent.role} tone="muted" />}
                </div>
                <PromptVersions projectId={id} agentId={agent.agent_id} />
              </article>
            ))}
          </>
        )}
      </Async>
      <article class="card" aria-label="Skills">
        <h2>Skills</h2>
        <Async state={skills}>
          {(data) => (
            <>
              <Table
                label="Skills"
                rows={data.skills}
                rowKey={(skill) => skill.skill_id}
                empty="No skill in this project."
                columns={[
                  { header: "Skill", cell: (skill) => <strong class="mono">{skill.name}</strong> },
                  { header: "Type", cell: (skill) => <Badge text={skill.skill_type} tone="muted" /> },
                  { header: "Agent", cell: (skill) => skill.agent_id || <span class="muted">shared</span> },
                  { header: "Description", cell: (skill) => skill.description },
                ]}
              />
              {data.skills.map((skill) => (
                <section key={skill.skill_id} class="skill-versions" aria-label={`Skill ${skill.name}`}>
                  <h3>
                    Versions of <span class="mono">{skill.name}</span>
                  </h3>
                  <SkillVersions skillId={skill.skill_id} name={skill.name} />
                </section>
              ))}
            </>
          )}
        </Async>
      </article>
      <p class="muted small">
        Runs of this project appear under <a href={href("runs")}>Runs</a>.
      </p>
    </div>
  );
}

function PromptVersions({ projectId, agentId }: { projectId: string; agentId: string }) {
  const versions = useAsync(
    () => postV2<{ versions: Version[] }>("control/prompt/versions", { project_id: projectId, agent_id: agentId, limit: 100 }),
    [projectId, agentId],
  );
  const diff = async (older: string, newer: string) =>
    (await postV2<DiffResponse>("control/prompt/diff", { project_id: projectId, agent_id: agentId, version_a_id: older, version_b_id: newer })).diff_text;
  return <Async state={versions}>{(data) => <VersionHistory title={`Prompt of ${agentId}`} versions={data.versions} diff={diff} />}</Async>;
}

function SkillVersions({ skillId, name }: { skillId: string; name: string }) {
  const versions = useAsync(() => postV2<{ versions: Version[] }>("control/skills/versions", { skill_id: skillId, limit: 100 }), [skillId]);
  const diff = async (older: string, newer: string) =>
    (await postV2<DiffResponse>("control/skills/diff", { skill_id: skillId, version_a_id: older, version_b_id: newer })).diff_text;
  return <Async state={versions}>{(data) => <VersionHistory title={`Skill ${name}`} versions={data.versions} diff={diff} />}</Async>;
}
