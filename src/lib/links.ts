/** Dashboard addresses; their shape is stable so links stored by businesses keep working. */
export interface DashboardLinks {
  contact(contactId: string): string;
  conversation(conversationId: string): string;
}

export function dashboardLinks(publicUrl: string): DashboardLinks {
  return {
    contact: (contactId) => `${publicUrl}/dashboard/contacts/${contactId}`,
    conversation: (conversationId) => `${publicUrl}/dashboard/conversations/${conversationId}`,
  };
}
