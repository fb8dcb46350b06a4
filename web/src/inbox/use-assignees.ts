import { useEffect, useState } from 'react';
import { api } from '../api/client';

export interface Named {
  id: string;
  name: string;
}

/** An AI agent, with why it does not answer now (null when it does). */
export interface NamedAgent extends Named {
  inactive_reason: string | null;
}

/** Whom the business's conversations can be assigned to: its users, teams and AI agents. */
export interface Assignees {
  users: Named[];
  teams: Named[];
  agents: NamedAgent[];
}

/** The business's users, teams and AI agents, read once when the component mounts (empty until then). */
export function useAssignees(): Assignees {
  const [assignees, setAssignees] = useState<Assignees>({ users: [], teams: [], agents: [] });
  useEffect(() => {
    let current = true;
    void Promise.all([
      api.GET('/dashboard/api/users'),
      api.GET('/dashboard/api/teams'),
      api.GET('/dashboard/api/agents'),
    ]).then(([users, teams, agents]) => {
      if (!current) return;
      setAssignees({
        users: (users.data?.users ?? []).map((user) => ({ id: user.id, name: user.name || user.email })),
        teams: (teams.data?.teams ?? []).map((team) => ({ id: team.id, name: team.name })),
        agents: (agents.data?.agents ?? []).map((agent) => ({
          id: agent.id,
          name: agent.name,
          inactive_reason: agent.status === 'active' ? null : (agent.inactive_reason ?? 'inactive'),
        })),
      });
    });
    return () => {
      current = false;
    };
  }, []);
  return assignees;
}
